"""How calibration results are shown: Markdown and self-contained HTML reports (Jinja2
templates in `templates/`), their plots, and the view data the templates print. The
statistics they show are computed in the modules of `calibration` itself."""
