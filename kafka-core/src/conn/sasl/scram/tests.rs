//! SCRAM exchanges: the RFC 7677 example, SHA-512 against an independent computation,
//! and every refusal.

use super::*;

const CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
const NONCE: &str = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
const SERVER_FIRST: &str =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

fn client(mechanism: Mechanism) -> ScramClient {
    let password = Secret::new("pencil");
    let mut c = ScramClient::new(mechanism, "user", password, CLIENT_NONCE.into()).unwrap();
    assert_eq!(
        c.initial_response().unwrap(),
        b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    );
    c
}

fn server_first(iterations: &str) -> String {
    format!("r={NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i={iterations}")
}

fn respond(step: Step) -> String {
    match step {
        Step::Respond(bytes) => String::from_utf8(bytes).unwrap(),
        Step::Done => panic!("expected a response"),
    }
}

#[test]
fn rfc7677_sha256_exchange() {
    let mut c = client(Mechanism::ScramSha256);
    let step = c.handle_challenge(SERVER_FIRST.as_bytes()).unwrap();
    assert_eq!(
        respond(step),
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
         p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    assert!(!c.is_complete());
    let server_final = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
    assert_eq!(c.handle_challenge(server_final).unwrap(), Step::Done);
    assert!(c.is_complete());
    assert_eq!(
        c.handle_challenge(b""),
        Err(SaslError::OutOfOrder {
            call: "handle_challenge"
        })
    );
}

#[test]
fn sha512_exchange_matches_independent_computation() {
    // Expected bytes computed with Python's hashlib.pbkdf2_hmac and hmac (SHA-512) on
    // the RFC 7677 inputs; the same script reproduces RFC 7677's SHA-256 values.
    let mut c = client(Mechanism::ScramSha512);
    let step = c.handle_challenge(SERVER_FIRST.as_bytes()).unwrap();
    assert_eq!(
        respond(step),
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
         p=gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ=="
    );
    let server_final = b"v=ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw==";
    assert_eq!(c.handle_challenge(server_final).unwrap(), Step::Done);
    assert!(c.is_complete());
}

#[test]
fn nonce_must_extend_client_nonce() {
    for nonce in ["XOprNGfwEbeRWgbNEkqO%hvYD", CLIENT_NONCE, "rOprNGfw"] {
        let mut c = client(Mechanism::ScramSha256);
        let msg = format!("r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
        assert_eq!(
            c.handle_challenge(msg.as_bytes()),
            Err(SaslError::NonceMismatch)
        );
        assert_eq!(
            c.handle_challenge(SERVER_FIRST.as_bytes()),
            Err(SaslError::Failed)
        );
    }
}

#[test]
fn iteration_count_outside_kafkas_range_refused() {
    let out_of_range = |iterations: u64, max: u32| SaslError::IterationCountOutOfRange {
        iterations,
        min: 4096,
        max,
    };
    assert_eq!(ScramClient::MIN_ITERATIONS, 4096);
    assert_eq!(ScramClient::DEFAULT_MAX_ITERATIONS, 16_384);
    for (text, iterations) in [
        ("4095", 4095),
        ("0", 0),
        ("16385", 16_385),
        ("1000000", 1_000_000),
        ("99999999999999999999999", u64::MAX),
    ] {
        for mechanism in [Mechanism::ScramSha256, Mechanism::ScramSha512] {
            let mut c = client(mechanism);
            let err = c.handle_challenge(server_first(text).as_bytes());
            assert_eq!(err, Err(out_of_range(iterations, 16_384)), "i={text}");
            // Sticky: the exchange is over.
            assert!(!c.is_complete());
        }
    }
    // Both ends of the range are accepted.
    for text in ["4096", "16384"] {
        let mut c = client(Mechanism::ScramSha512);
        let step = c.handle_challenge(server_first(text).as_bytes());
        assert!(matches!(step, Ok(Step::Respond(_))), "i={text}: {step:?}");
    }
    // A lower ceiling set by the caller holds too.
    let mut c = client(Mechanism::ScramSha256).with_max_iterations(5000);
    let err = c.handle_challenge(server_first("5001").as_bytes());
    assert_eq!(err, Err(out_of_range(5001, 5000)));
}

#[test]
fn bad_server_signature_refused() {
    let mut c = client(Mechanism::ScramSha256);
    let _ = respond(c.handle_challenge(SERVER_FIRST.as_bytes()).unwrap());
    let forged = b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
    assert_eq!(
        c.handle_challenge(forged),
        Err(SaslError::ServerSignatureMismatch)
    );
    assert!(!c.is_complete());
}

#[test]
fn server_error_surfaced() {
    let mut c = client(Mechanism::ScramSha256);
    let _ = respond(c.handle_challenge(SERVER_FIRST.as_bytes()).unwrap());
    let err = c.handle_challenge(b"e=invalid-proof");
    let expected = SaslError::ServerError {
        message: "invalid-proof".into(),
    };
    assert_eq!(err, Err(expected));
    let mut c = client(Mechanism::ScramSha256);
    assert!(matches!(
        c.handle_challenge(b"e=unknown-user"),
        Err(SaslError::ServerError { .. })
    ));
}

#[test]
fn malformed_server_messages_refused() {
    let cases: [&[u8]; 9] = [
        b"",
        b"\xff\xfe",
        b"m=ext,r=x",
        b"s=W22Z,r=x,i=4096",
        b"r=rOprNGfwEbeRWgbNEkqOxyz",
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=!!!!,i=4096",
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=,i=4096",
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22Z,i=+4096",
        b"r=rOprNGfwEbeRWgbNEkqO\x7fz,s=W22Z,i=4096",
    ];
    for case in cases {
        assert!(
            client(Mechanism::ScramSha256)
                .handle_challenge(case)
                .is_err(),
            "{case:?}"
        );
    }
    let mut c = client(Mechanism::ScramSha256);
    let _ = respond(c.handle_challenge(SERVER_FIRST.as_bytes()).unwrap());
    assert!(c.handle_challenge(b"v=not base64").is_err());
}

#[test]
fn username_escaping() {
    assert_eq!(escape_username("a=b,c"), "a=3Db=2Cc");
    assert_eq!(escape_username("=,"), "=3D=2C");
    let mut c =
        ScramClient::new(Mechanism::ScramSha256, "x=y,z", "p".into(), "abc".into()).unwrap();
    assert_eq!(c.initial_response().unwrap(), b"n,,n=x=3Dy=2Cz,r=abc");
}

#[test]
fn construction_and_misuse() {
    let new = |m, user: &str, nonce: &str| ScramClient::new(m, user, "p".into(), nonce.into());
    assert!(matches!(
        new(Mechanism::Plain, "u", "n"),
        Err(SaslError::CredentialsMismatch { .. })
    ));
    assert_eq!(
        new(Mechanism::ScramSha256, "u", "a,b").err(),
        Some(SaslError::InvalidNonce)
    );
    assert_eq!(
        new(Mechanism::ScramSha256, "u", "").err(),
        Some(SaslError::InvalidNonce)
    );
    assert!(new(Mechanism::ScramSha256, "", "n").is_err());
    let mut c = client(Mechanism::ScramSha256);
    assert_eq!(
        c.initial_response(),
        Err(SaslError::OutOfOrder {
            call: "initial_response"
        })
    );
    assert_eq!(c.initial_response(), Err(SaslError::Failed));
}

#[test]
fn debug_never_shows_password() {
    let mut c = client(Mechanism::ScramSha256);
    assert!(!format!("{c:?}").contains("pencil"));
    let _ = respond(c.handle_challenge(SERVER_FIRST.as_bytes()).unwrap());
    assert!(!format!("{c:?}").contains("pencil"));
}

#[test]
fn truncated_and_mangled_server_messages_never_panic() {
    let server_final = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
    for (message, at_final) in [(SERVER_FIRST, false), (server_final, true)] {
        let bytes = message.as_bytes();
        let mut cases: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
        for at in 0..bytes.len() {
            for b in [0u8, b',', 0xff] {
                let mut mangled = bytes.to_vec();
                mangled[at] = b;
                if mangled != bytes {
                    cases.push(mangled);
                }
            }
        }
        for case in cases {
            let mut c = client(Mechanism::ScramSha256);
            if at_final {
                let _ = respond(c.handle_challenge(SERVER_FIRST.as_bytes()).unwrap());
            }
            assert!(c.handle_challenge(&case).is_err(), "{case:?}");
            assert!(!c.is_complete());
        }
    }
}
