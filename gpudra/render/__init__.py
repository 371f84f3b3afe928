"""Data to text for the commands: YAML/JSON documents, CEL literals, policy reports, simulation tables.

Pure functions from the lower packages' results to strings (or rich renderables); no I/O, no exit codes.
"""
