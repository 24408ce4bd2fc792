"""SQL that breaks behind transaction/statement pooling: find it (extract.py) and
classify it with the real PostgreSQL parser (hazards.py)."""
