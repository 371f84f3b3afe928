"""Trace-driven what-if simulator: device plugin vs DRA placement on real or generated GPU workloads."""
