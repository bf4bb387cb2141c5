//! SASL credentials the adapter supplies: the OAUTHBEARER token, cached for later
//! connections while it is valid, asked for once for every connection waiting.

use std::time::Instant;

use super::{Client, ConnId, Event, Phase, Slot};
use crate::conn::sasl::SaslCredentials;

impl Client {
    /// Answers [`Event::OAuthTokenNeeded`]: every connection waiting goes on with the
    /// token (kept for later connections until `lifetime_ms`), or fails with the reason.
    pub fn handle_oauth_token(
        &mut self,
        now: Instant,
        token: Result<crate::config::OAuthToken, String>,
    ) {
        self.last_now = Some(now);
        let credentials = token.map(|t| {
            let c = SaslCredentials::OAuthBearer {
                token: t.value.clone(),
                extensions: t.extensions.clone(),
            };
            self.oauth_token = Some(t);
            c
        });
        for conn in std::mem::take(&mut self.awaiting_token) {
            if let Some(Slot {
                phase: Phase::Open(c),
                ..
            }) = self.slots.get_mut(&conn)
            {
                c.supply_credentials(now, credentials.clone());
                self.drain(now, conn);
            }
        }
        self.run_ops(now);
    }

    /// A connection asks for credentials: the cached token while it is valid (a minute
    /// of margin), else the adapter is asked once.
    pub(super) fn credentials_wanted(&mut self, now: Instant, conn: ConnId) {
        let now_ms = self.wall_clock.as_millis() as i64;
        let cached = self
            .oauth_token
            .as_ref()
            .filter(|t| t.lifetime_ms > now_ms + 60_000)
            .map(|t| SaslCredentials::OAuthBearer {
                token: t.value.clone(),
                extensions: t.extensions.clone(),
            });
        match cached {
            Some(c) => {
                if let Some(Slot {
                    phase: Phase::Open(connection),
                    ..
                }) = self.slots.get_mut(&conn)
                {
                    connection.supply_credentials(now, Ok(c));
                }
            }
            None => {
                if self.awaiting_token.is_empty() {
                    self.events.push_back(Event::OAuthTokenNeeded);
                }
                self.awaiting_token.insert(conn);
            }
        }
    }
}
