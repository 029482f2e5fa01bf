"""The RocksDB adapter. This package is the only code that imports rocksdict."""
