"""The pages between the engines and the browser: one module per page, each owning its context,
its live declaration and its cursor; the helpers they share (rendering, the chart, the headline)."""
