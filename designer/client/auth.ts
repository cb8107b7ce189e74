// The API token of this browser: kept in localStorage, sent as Bearer on every API call
// and in the Socket.IO handshake. A 401 asks the user for a token (one prompt for all the
// requests that were refused together) and the refused requests are sent again.

const STORAGE_KEY = 'baton.token';

export function readToken(): string {
  try {
    return localStorage.getItem(STORAGE_KEY) ?? '';
  } catch {
    return ''; // storage disabled: no token survives a reload
  }
}

export function saveToken(token: string): void {
  try {
    if (token) localStorage.setItem(STORAGE_KEY, token);
    else localStorage.removeItem(STORAGE_KEY);
  } catch {
    // storage disabled: the token lasts this page only
  }
  memoryToken = token;
  for (const listener of listeners) listener(token);
}

let memoryToken = readToken();

export function currentToken(): string {
  return memoryToken;
}

export function authHeaders(): Record<string, string> {
  return memoryToken ? { authorization: `Bearer ${memoryToken}` } : {};
}

const listeners = new Set<(token: string) => void>();

/** Called with the new token whenever it changes (the live stream reconnects with it). */
export function onTokenChange(listener: (token: string) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** What the app shell shows when a token is needed; resolves with the token, or undefined when the user cancels. */
export type TokenPrompt = (reason: string) => Promise<string | undefined>;

let prompt: TokenPrompt | undefined;
let pending: Promise<string | undefined> | undefined;

export function setTokenPrompt(p: TokenPrompt): void {
  prompt = p;
}

/** Asks once for all callers refused at the same time; saves a token the user gives. */
export function askForToken(reason: string): Promise<string | undefined> {
  if (!prompt) return Promise.resolve(undefined);
  pending ??= prompt(reason).then((token) => {
    pending = undefined;
    if (token !== undefined) saveToken(token.trim());
    return token === undefined ? undefined : token.trim();
  });
  return pending;
}
