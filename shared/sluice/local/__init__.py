"""The local runtime: the same wiring as AWS, read from template.yaml, on moto and embedded Postgres."""
