// The console's entry point, loaded by every dashboard page as an ES
// module (<script type="module">; no build step, no framework).
//
// The pages link this file by a versioned URL (app.js?v=…); everything
// else is imported by relative, unversioned URLs (./router.js, ./api.js,
// ./dom.js, ./live.js, ./<page>.js), so that each module is loaded once
// however many modules import it. Page modules must therefore import
// ./router.js, never ./app.js.

import { boot } from './router.js';

boot();
