export const PAGE_HTML = "<!doctype html><title>Quiver</title>";
