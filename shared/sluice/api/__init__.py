"""HTTP plumbing shared by the API functions: the resolver, error mapping, bodies, uploads."""
