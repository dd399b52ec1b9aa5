// Starts GraphiQL on the page's #graphiql element, whose data-endpoint is
// the GraphQL path. Kept out of the page so that the page's
// Content-Security-Policy can refuse inline scripts.
(function () {
  'use strict';
  var root = document.getElementById('graphiql');
  var path = root.getAttribute('data-endpoint');
  var url = location.protocol + '//' + location.host + path;
  var subscriptionUrl = (location.protocol === 'https:' ? 'wss:' : 'ws:') + '//' + location.host + path;
  // The headers typed into the editor, read when the socket connects.
  var editorHeaders = function () {
    try { return JSON.parse(localStorage.getItem('graphiql:headers') || '{}'); } catch (e) { return {}; }
  };
  var fetcher = GraphiQL.createFetcher({ url: url, subscriptionUrl: subscriptionUrl, wsConnectionParams: editorHeaders });
  ReactDOM.createRoot(root).render(React.createElement(GraphiQL, {
    fetcher: fetcher,
    // Header values must be ASCII (fetch refuses anything else), hence
    // the plain placeholders.
    defaultHeaders: JSON.stringify({ 'X-API-Key': 'swk_YOUR_KEY', 'X-API-Secret': 'sws_YOUR_SECRET' }, null, 2),
    defaultEditorToolsVisibility: 'headers',
  }));
})();
