//! Request and response headers: which header version an API version uses, and
//! encoding/decoding of framed messages.
//!
//! Rules (from Kafka's generator): a request uses header v2 when its API version is
//! flexible, else v1; a response uses header v1 when flexible, else v0, except that
//! ApiVersions responses always use header v0 so any client can read the broker's answer.

use super::messages::ApiKey;

impl ApiKey {
    /// The request header version used with request `version` of this API.
    pub fn request_header_version(self, version: i16) -> i16 {
        match self.request_flexible_min() {
            Some(min) if version >= min => 2,
            _ => 1,
        }
    }

    /// The response header version used with response `version` of this API.
    pub fn response_header_version(self, version: i16) -> i16 {
        if self == ApiKey::ApiVersions {
            return 0;
        }
        match self.response_flexible_min() {
            Some(min) if version >= min => 1,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_versions_follow_flexibility_with_api_versions_exception() {
        assert_eq!(ApiKey::Produce.request_header_version(8), 1);
        assert_eq!(ApiKey::Produce.request_header_version(9), 2);
        assert_eq!(ApiKey::Produce.response_header_version(9), 1);
        assert_eq!(ApiKey::ApiVersions.request_header_version(3), 2);
        assert_eq!(ApiKey::ApiVersions.response_header_version(3), 0);
        assert_eq!(ApiKey::SaslHandshake.request_header_version(1), 1);
        assert_eq!(ApiKey::SaslHandshake.response_header_version(1), 0);
    }
}
