"""What a deployment watches: the health endpoint, Prometheus metrics, request IDs, JSON logs, the server.

One module per concept; none of it writes to the ledger (docs/deployment.md).
"""
