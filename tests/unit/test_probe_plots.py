"""The probe figure draws a legend only for judges it plotted: a run whose cells have no
mean change (every pair failed to grade) renders without matplotlib's empty-legend warning."""

from __future__ import annotations

import warnings

from calibration.render.plots import plt
from calibration.render.probe_plots import effects, figure


def _report(mean_change):
    return {
        "probes": [{"name": "verbosity"}],
        "judges": ["judge-a"],
        "cells": [
            {
                "judge": "judge-a",
                "probe": "verbosity",
                "mean_change": mean_change,
                "ci": None if mean_change is None else [0.1, 0.9],
                "moved": False,
            }
        ],
        "options": {"q": 0.1},
    }


def test_a_run_with_nothing_to_plot_renders_without_a_legend_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        image = effects(_report(None))
    assert image.startswith(b"\x89PNG")


def test_a_plotted_judge_gets_its_legend_entry_and_an_unplotted_one_none():
    plotted, unplotted = figure(_report(0.5)), figure(_report(None))
    try:
        legend = plotted.axes[0].get_legend()
        assert [text.get_text() for text in legend.get_texts()] == ["judge-a"]
        assert unplotted.axes[0].get_legend() is None
    finally:
        plt.close(plotted)
        plt.close(unplotted)
