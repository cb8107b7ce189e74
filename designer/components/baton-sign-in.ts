// Who the tasklist acts for: the signed-in person (name and groups from GET /api/me) with Sign
// out, a Sign in button when nobody is, and on a server without tokens a name and groups to act as.
import { html, nothing } from 'lit';
import { saveTypedPerson, signOut, type Person } from '../client/person.ts';
import { LightElement } from './light-element.ts';

/** The detail of `baton-person-change`. */
export interface PersonChange {
  ask: boolean;
  /** who is signed in now, when the sign-in knows (signed out); else the page reads it */
  person?: Person;
}

export class BatonSignIn extends LightElement {
  static override properties = { person: { attribute: false }, editing: { state: true } };
  declare person: Person | undefined;
  declare editing: boolean;

  constructor() {
    super();
    this.person = undefined;
    this.editing = false;
  }

  /** Asks the page to read who is signed in again (`ask`: open the token dialog first), or tells it who is. */
  private changed(ask: boolean, person?: Person): void {
    this.emit<PersonChange>('baton-person-change', { ask, ...(person ? { person } : {}) });
  }

  private onSubmitName(e: Event): void {
    e.preventDefault();
    const data = new FormData(e.target as HTMLFormElement);
    const groups = String(data.get('groups') ?? '')
      .split(',')
      .map((g) => g.trim())
      .filter((g) => g !== '');
    saveTypedPerson(String(data.get('name') ?? '').trim(), groups);
    this.editing = false;
    this.changed(false);
  }

  private renderNameForm(p: Person) {
    return html`<form class="person-form" @submit=${(e: Event) => this.onSubmitName(e)}>
      <label>Your name <input name="name" required autocomplete="username" .value=${p.name ?? ''}></label>
      <label>Groups <input name="groups" placeholder="sales, managers" .value=${p.groups.join(', ')}></label>
      <button class="primary" type="submit">Use</button>
      ${p.name ? html`<button type="button" @click=${() => (this.editing = false)}>Cancel</button>` : nothing}
      <span class="hint">This server has no tokens: the tasklist acts for the name you give.</span>
    </form>`;
  }

  private groups(p: Person) {
    return p.groups.length > 0
      ? html` · groups <span class="person-groups">${p.groups.join(', ')}</span>`
      : html` · <span class="person-groups">no groups</span>`;
  }

  override render() {
    const p = this.person;
    if (!p) return html`<div class="sign-in"><span class="empty">Signing in…</span></div>`;
    if (p.source === 'browser' && (this.editing || p.name === null))
      return html`<div class="sign-in">${this.renderNameForm(p)}</div>`;
    if (p.name === null)
      return html`<div class="sign-in" data-signed-in="false">
        <span>Not signed in.</span>
        <button class="primary" type="button" @click=${() => this.changed(true)}>Sign in</button>
      </div>`;
    return html`<div class="sign-in" data-signed-in="true">
      <span>${p.source === 'token' ? 'Signed in as' : 'Acting as'} <strong class="person-name">${p.name}</strong>${this.groups(p)}
        ${p.role && p.role !== 'person' ? html` · role ${p.role}` : nothing}</span>
      ${
        p.source === 'token'
          ? html`<button type="button" @click=${() => {
              this.changed(false, signOut(p));
            }}>Sign out</button>`
          : html`<button type="button" @click=${() => (this.editing = true)}>Change</button>`
      }
    </div>`;
  }
}

customElements.define('baton-sign-in', BatonSignIn);
