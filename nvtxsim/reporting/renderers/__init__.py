"""Renderers beyond the classic summary: view tables (terminal/csv/json/markdown), HTML, Perfetto."""
