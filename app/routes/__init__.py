"""HTTP routes: one router per noun, JSON under /api, pages and forms beside them."""
