// The Overview page (being built): the account at a glance.
import { graphql } from './api.js';
import { h, section, append } from './dom.js';

export async function render(root) {
  const data = await graphql('query Overview { account { id name numbers { number service provider enabled } } }');
  append(root, section('Account', h('p', null, data.account.name, ' ', h('code', null, data.account.id))));
}
