"""The effects pipeline: Celery workers that turn committed outbox intents into exactly one real-world effect.

Workers reach the ledger only through the console's internal API with their
own credential (``ledger_api``); they never open the ledger directory and
never load Django. See docs/effects.md.
"""
