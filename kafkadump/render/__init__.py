"""Renderers: decoded objects in, text out.  They never decode and never print."""
