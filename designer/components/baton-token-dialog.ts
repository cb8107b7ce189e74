// The API token: a header button that shows whether one is set, and a modal dialog to
// enter, replace or clear it. The API client opens the same dialog when a call gets 401.
import { html, nothing } from 'lit';
import { currentToken, onTokenChange, saveToken, setTokenPrompt } from '../client/auth.ts';
import { LightElement } from './light-element.ts';

export class BatonTokenDialog extends LightElement {
  static override properties = { hasToken: { state: true }, reason: { state: true } };
  declare hasToken: boolean;
  declare reason: string;
  private resolvePrompt: ((token: string | undefined) => void) | undefined;
  private stopListening: (() => void) | undefined;

  constructor() {
    super();
    this.hasToken = currentToken() !== '';
    this.reason = '';
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.stopListening = onTokenChange((token) => (this.hasToken = token !== ''));
    setTokenPrompt((reason) => this.open(reason));
  }

  override disconnectedCallback(): void {
    this.stopListening?.();
    super.disconnectedCallback();
  }

  private get dialog(): HTMLDialogElement {
    return this.querySelector('dialog') as HTMLDialogElement;
  }

  private async open(reason: string): Promise<string | undefined> {
    this.reason = reason;
    await this.updateComplete;
    const input = this.querySelector<HTMLInputElement>('input[name="token"]')!;
    input.value = currentToken();
    if (!this.dialog.open) this.dialog.showModal();
    input.focus();
    return new Promise((resolve) => (this.resolvePrompt = resolve));
  }

  private finish(token: string | undefined): void {
    if (this.dialog.open) this.dialog.close();
    const resolve = this.resolvePrompt;
    this.resolvePrompt = undefined;
    this.reason = '';
    resolve?.(token);
  }

  /** Opened from the header button: a token given is saved here (a 401 prompt saves through askForToken). */
  private async edit(): Promise<void> {
    const token = await this.open('');
    if (token !== undefined) saveToken(token.trim());
  }

  private onSubmit(e: Event): void {
    e.preventDefault();
    this.finish(this.querySelector<HTMLInputElement>('input[name="token"]')!.value);
  }

  override render() {
    return html`
      <button class="token-button" type="button" aria-haspopup="dialog" @click=${() => void this.edit()}
        title=${this.hasToken ? 'An API token is set for this browser' : 'No API token set'}>
        ${this.hasToken ? 'Token set' : 'Set token'}
      </button>
      <dialog class="token-dialog" aria-labelledby="token-dialog-title" @cancel=${(e: Event) => {
        e.preventDefault();
        this.finish(undefined);
      }}>
        <form @submit=${(e: Event) => this.onSubmit(e)}>
          <h2 id="token-dialog-title">API token</h2>
          ${this.reason ? html`<p class="error" role="alert">${this.reason}</p>` : nothing}
          <p>The server checks a token on every call. Paste one of role admin (deploy, start, operate),
            viewer (watch only) or person (work on your tasks); it is kept in this browser's storage.</p>
          <label>Token <input name="token" type="password" autocomplete="off" spellcheck="false"></label>
          <div class="actions">
            <button class="primary" type="submit">Save</button>
            <button type="button" @click=${() => this.finish('')}>Clear</button>
            <button type="button" @click=${() => this.finish(undefined)}>Cancel</button>
          </div>
        </form>
      </dialog>`;
  }
}

customElements.define('baton-token-dialog', BatonTokenDialog);
