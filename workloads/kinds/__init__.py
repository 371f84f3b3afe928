"""One module per operator (the built-in kinds in `core`), each holding its kinds' records in `KINDS`.

`workloads.registry` finds every module here and lists the kinds in the modules' `ORDER`: adding a kind is adding
its record to its operator's module (or a new module with `KINDS` and `ORDER`) and a test beside the others.
"""
