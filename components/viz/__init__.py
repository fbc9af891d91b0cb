"""Pictures: attention heatmaps (``heatmaps``), alignment, sweep and run-comparison charts, the
CJK-capable font (``fonts``), and the attention explorer page (``explorer``) with its documents
(``explorer_data``). Matplotlib on an Agg canvas, no pyplot state.

May import: every other core package. Nothing from MLflow or Prefect.
"""
