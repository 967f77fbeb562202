"""PySpark batch jobs (audits, backfills): pure DataFrame transforms plus a main(argv)."""
