"""The "Replication" page of the Airflow UI: queries on the state DB, page shaping, HTML.

``queries`` runs the reporting SQL of ``sql/queries/`` on the state DB; ``page``
shapes the rows (pure); ``chart`` and ``render`` draw them (pure); ``app`` is the
FastAPI app that the plugin in ``plugins/`` mounts in Airflow's API server.
"""
