"""The state database: SQLAlchemy 2 models, migrations (in ``sql/``) and repository functions."""
