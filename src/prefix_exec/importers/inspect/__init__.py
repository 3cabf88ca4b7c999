"""inspect_ai eval logs: the archive, the log reader, and the BFCL and tau samples read from them."""
