"""PostgreSQL access: the connection pool, the migrations runner and the repositories."""
