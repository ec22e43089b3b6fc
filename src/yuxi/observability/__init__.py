"""Metrics and logs: what an operator sees of a running Yuxi.

A base-layer package (it imports nothing above ``errors``/``vocabulary``): services, the runtime
and the API all report into it. :mod:`.metrics` owns every metric definition, on a registry of
its own built by the composition root; :mod:`.logs` owns the JSON log format and the run
context every log line of a run carries.
"""
