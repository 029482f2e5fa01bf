"""Benchmarks of the ledger engine: ``python -m benchmarks [NAME ...]`` (docs/benchmarks.md).

Each benchmark is one module in this package with a one-line docstring and a
``run(report, workdir)`` function. Adding one is that module plus its name here.
"""

BENCHMARKS = (
    "raw_floor",
    "single_command",
    "group_commit",
    "replay",
    "export_hash",
    "commit_profile",
    "executor_cpu",
    "receipts",
    "allocation",
    "day_allocation",
    "city_freeze",
    "invariants",
    "balances",
    "merkle",
    "payments",
    "signer_journal",
    "storage_protections",
    "peers",
)
