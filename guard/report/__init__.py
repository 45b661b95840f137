"""An eval run (and a calibration run) as one self-contained HTML page, and the SVG charts
they share with the dashboard.

`render_report` gives a page that opens offline, from a file or a mail
attachment: inline CSS, charts as inline SVG (`guard.report.charts`), no
script, and no reference to anything outside the page (not one URL). The page
is a Jinja2 template shipped in this package; every text that comes from the
dataset, the judge or the caller is escaped by its autoescaping.
`render_calibration` draws a `bias-guard calibrate` run the same way.
"""

from guard.report.bands import HISTOGRAM_BUCKETS, SUMMARY_BUCKETS, bucket_labels, score_buckets
from guard.report.calibration import render_calibration, thresholds_chart
from guard.report.page import paired_opinions, render_report

__all__ = [
    "HISTOGRAM_BUCKETS",
    "SUMMARY_BUCKETS",
    "bucket_labels",
    "paired_opinions",
    "render_calibration",
    "render_report",
    "score_buckets",
    "thresholds_chart",
]
