"""The project configuration: `[tool.pool-advisor]` in pyproject.toml or
`.pool-advisor.toml`, read into Settings (settings); its pydantic schema, imported only
when a file exists (schema)."""
