// Placeholder: the console's script replaces this file. It runs as an
// external script under the dashboard's Content-Security-Policy
// (script-src 'self'): no inline script, no eval.
"use strict";
