// The OpenID provider the tests log in through: node-oidc-provider (OpenID Certified) on HTTPS
// on loopback, with one confidential client (rackboot) and the accounts of a JSON file read at
// every login ({"olivia": {"groups": ["rack-ops"]}}), so a test changes a user's claims by
// writing the file. Its development login, consent and device pages stand in for the company's;
// the device authorization flow is on for the CLI's login.
//   node tests/oidc/provider.mjs CONFIG.json   (prints "ready" once it listens)
import fs from 'node:fs';
import https from 'node:https';
import Provider from 'oidc-provider';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const accounts = () => JSON.parse(fs.readFileSync(cfg.accounts, 'utf8'));

const provider = new Provider(cfg.issuer, {
  clients: [{
    client_id: cfg.client_id,
    client_secret: cfg.client_secret,
    redirect_uris: [cfg.redirect_uri],
    grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: { openid: ['sub'], profile: ['preferred_username'], groups: ['groups'] },
  // The claims go into the ID token itself, where rackboot reads them.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true }, deviceFlow: { enabled: true } },
  cookies: { keys: ['rackboot-test-provider-cookie-key'] },
  pkce: { required: () => true },
  async findAccount(ctx, id) {
    const a = accounts()[id];
    if (!a) return undefined;
    return { accountId: id, async claims() { return { sub: id, preferred_username: id, groups: a.groups }; } };
  },
});

https
  .createServer({ cert: fs.readFileSync(cfg.cert), key: fs.readFileSync(cfg.key) }, provider.callback())
  .listen(cfg.port, '127.0.0.1', () => console.log('ready'));
