"""`plurm simulate`: workloads (SWF traces, the Lublin-Feitelson model) replayed through
the controller's scheduling core in virtual time.  docs/simulator.md.

swf.py (the trace format), workload.py (the generator), engine.py (the only module that
drives the core), metrics.py, report.py (files and plots), cli.py (the command line).
"""
