"""Byte sources: where the decoder's bytes come from."""
