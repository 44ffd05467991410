/**
 * The page's skeleton. It holds no data: the script fills it in from the JSON endpoints, with
 * text nodes only. Every URL is relative, so the page works under any mount path.
 */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Leader election</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="style.css">
<script type="module" src="client/main.js"></script>
</head>
<body>
<header class="bar">
<a class="brand" href="#/">Leader election</a>
<nav id="crumbs" class="crumbs" aria-label="location"></nav>
<span id="live" class="live" data-state="connecting" role="status" aria-live="polite">connecting…</span>
</header>
<div id="problem" class="problem" role="alert" hidden></div>
<main id="view"><p class="muted">loading…</p></main>
<noscript><p class="problem">The dashboard needs JavaScript.</p></noscript>
</body>
</html>
`;

/** The tab's icon: a crown on the dashboard's dark blue. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#17202e"/><path d="M6 23 L8 11 L13 16 L16 8 L19 16 L24 11 L26 23 Z" fill="#35c46a"/></svg>
`;
