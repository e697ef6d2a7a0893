"""Adapters: the ways in from outside (the local web page), each thin over the operations table."""
