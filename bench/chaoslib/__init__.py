"""The fault harness behind ``bench/chaos.py``: clusters behind Toxiproxy, a numbered
workload, faults injected one after another, and an account of every record."""
