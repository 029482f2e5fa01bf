"""Porto London ledger engine: a deterministic, hash-chained ledger on RocksDB.

Layers, innermost first:

- ``canonical``, ``amounts``, ``keys``, ``errors``: value encodings every layer shares.
- ``domain``: the pure rules. They read state through a view and return changes.
- ``storage``: the RocksDB adapter. Nothing else touches rocksdict.
- ``application``: the ledger owner, its serial executor and the journal chain.
- ``projections`` and ``checkpoint``: indexes, exports, replay, backup and restore.
"""
