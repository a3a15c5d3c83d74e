//! The configuration's tests: the embedded default, environment overrides, the checked
//! bounds, the deployment secret, witnesses and leases.

use super::*;
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn embedded_default_parses() {
    let c = Config::parse("embedded", EMBEDDED, &env(&[])).unwrap();
    assert_eq!(c.store, "file://./var/store");
    assert_eq!(c.max_document_bytes, 64 * 1024 * 1024);
    assert!(c.a.api_key.is_none());
    assert_eq!(c.secret.file, PathBuf::from("var/keys/seal.secret"));
}

#[test]
fn env_overrides_slots_and_keys_stay_secret() {
    let c = Config::parse(
        "embedded",
        EMBEDDED,
        &env(&[
            ("SEAL_JUDGE_A_URL", "http://127.0.0.1:9/v1"),
            ("SEAL_JUDGE_A_MODEL", "m-a"),
            ("SEAL_JUDGE_A_KEY", "sk-very-secret"),
            ("SEAL_JUDGE_TIMEOUT_MS", "1500"),
        ]),
    )
    .unwrap();
    assert_eq!(c.a.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
    assert_eq!(c.a.model, "m-a");
    assert_eq!(c.a.timeout, Duration::from_millis(1500));
    assert_eq!(c.b.timeout, Duration::from_millis(1500));
    assert!(!format!("{c:?}").contains("sk-very-secret"));
}

#[test]
fn lease_settings_and_replica_ids_are_checked() {
    let c = Config::parse("embedded", EMBEDDED, &env(&[])).unwrap();
    assert_eq!(c.leases.margin, Duration::from_millis(5_000));
    assert_eq!(c.leases.max_clock_skew, Duration::from_millis(10_000));
    assert_eq!(c.leases.replica_id, None);
    let ok = Config::parse("e", EMBEDDED, &env(&[("SEAL_REPLICA_ID", "seal-7f9c:0")])).unwrap();
    assert_eq!(ok.leases.replica_id.as_deref(), Some("seal-7f9c:0"));
    // Hostile or oversized replica ids and lease times are refused, naming the field.
    let long = "r".repeat(129);
    for (id, field) in [
        ("bad id\u{1b}[31m", "SEAL_REPLICA_ID"),
        ("a/b", "SEAL_REPLICA_ID"),
        (long.as_str(), "SEAL_REPLICA_ID"),
    ] {
        let e = Config::parse("e", EMBEDDED, &env(&[("SEAL_REPLICA_ID", id)])).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(field) && !msg.contains('\u{1b}'), "{msg}");
    }
    let big = EMBEDDED.replace("max_clock_skew_ms = 10000", "max_clock_skew_ms = 99999999");
    let e = Config::parse("e", &big, &env(&[])).unwrap_err();
    assert!(e.to_string().contains("max_clock_skew_ms"), "{e}");
    let unknown = EMBEDDED.replace("margin_ms = 5000", "margin_ms = 5000\nttl_ms = 1");
    assert!(Config::parse("e", &unknown, &env(&[]))
        .unwrap_err()
        .to_string()
        .contains("ttl_ms"));
}

/// The embedded config with `keys.secret` at `file`.
fn with_secret_file(file: &Path) -> String {
    EMBEDDED.replace(
        "[keys]\n",
        &format!("[keys]\nsecret = {:?}\n", file.display().to_string()),
    )
}

#[test]
fn no_constant_salt_a_missing_or_short_secret_is_refused_naming_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys/seal.secret");
    let text = with_secret_file(&file);
    // Neither the variable nor the file: refused, saying how to make one.
    let c = Config::parse("t", &text, &env(&[])).unwrap();
    let e = c.deployment_secret().unwrap_err().to_string();
    assert!(
        e.contains("SEAL_SEED_SALT") && e.contains("seal keygen --out") && e.contains("keys"),
        "{e}"
    );
    // A short variable: refused naming the variable, never used.
    let c = Config::parse("t", &text, &env(&[("SEAL_SEED_SALT", "test-salt")])).unwrap();
    let e = c.deployment_secret().unwrap_err().to_string();
    assert!(e.contains("SEAL_SEED_SALT") && e.contains("9 bytes"), "{e}");
    let long = "0123456789abcdef0123456789abcdef";
    let c = Config::parse("t", &text, &env(&[("SEAL_SEED_SALT", long)])).unwrap();
    assert_eq!(c.deployment_secret().unwrap().expose(), long);
    assert!(!format!("{c:?}").contains(long), "the secret never prints");
}

#[test]
fn no_constant_salt_the_secret_file_is_read_like_a_private_key() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("seal.secret");
    write_secret_file(&file).unwrap();
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let c = Config::parse("t", &with_secret_file(&file), &env(&[])).unwrap();
    let secret = c.deployment_secret().unwrap();
    assert_eq!(secret.expose().len(), 64);
    assert!(secret.expose().bytes().all(|b| b.is_ascii_hexdigit()));
    // Never overwritten; a second one is another secret.
    assert!(write_secret_file(&file).is_err());
    let other = dir.path().join("other.secret");
    write_secret_file(&other).unwrap();
    assert_ne!(
        std::fs::read(&file).unwrap(),
        std::fs::read(&other).unwrap()
    );
    // The variable, when set, wins over the file.
    let long = "x".repeat(40);
    let c = Config::parse(
        "t",
        &with_secret_file(&file),
        &env(&[("SEAL_SEED_SALT", &long)]),
    )
    .unwrap();
    assert_eq!(c.deployment_secret().unwrap().expose(), long);
    // Readable by others, a link, a FIFO, too short: refused naming the file.
    let loose = dir.path().join("loose.secret");
    std::fs::write(&loose, "y".repeat(64)).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = dir.path().join("link.secret");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let short = dir.path().join("short.secret");
    seal_fs::fsio::write_new(&short, b"tiny\n", 0o600).unwrap();
    for (path, needle) in [
        (&loose, "chmod 600"),
        (&link, "symbolic link"),
        (&short, "at least 32"),
    ] {
        let c = Config::parse("t", &with_secret_file(path), &env(&[])).unwrap();
        let e = c.deployment_secret().unwrap_err().to_string();
        assert!(
            e.contains(needle) && e.contains(&*path.display().to_string()),
            "{e}"
        );
    }
}

#[test]
fn the_secret_file_defaults_to_beside_the_signing_key() {
    let text = EMBEDDED.replace(
        "signing_key = \"var/keys/seal.key.pem\"",
        "signing_key = \"/etc/seal/k/seal.key.pem\"",
    );
    let c = Config::parse("t", &text, &env(&[])).unwrap();
    assert_eq!(c.secret.file, PathBuf::from("/etc/seal/k/seal.secret"));
    // `--key` moves the default along; an explicit keys.secret stays.
    let c = c.with_signing_key(None);
    assert_eq!(c.secret.file, PathBuf::from("/etc/seal/k/seal.secret"));
    let c = c.with_signing_key(Some(Path::new("keys/seal.key.pem")));
    assert_eq!(c.secret.file, PathBuf::from("keys/seal.secret"));
    assert_eq!(c.signing_key, PathBuf::from("keys/seal.key.pem"));
    let pinned = with_secret_file(Path::new("/run/s/x.secret"));
    let c = Config::parse("t", &pinned, &env(&[])).unwrap();
    let c = c.with_signing_key(Some(Path::new("keys/seal.key.pem")));
    assert_eq!(c.secret.file, PathBuf::from("/run/s/x.secret"));
}

#[test]
fn witnesses_and_their_quorum_are_checked() {
    let with = |quorum: &str, tables: &str| {
        let text = EMBEDDED.replacen("[limits]", &format!("{quorum}\n[limits]"), 1);
        Config::parse("w.toml", &format!("{text}\n{tables}"), &env(&[]))
    };
    let two = "[[witnesses]]\nname = \"w.example/1\"\nurl = \"https://w1.example\"\npublic_key = \"keys/w1.pem\"\n\
               [[witnesses]]\nname = \"w.example/2\"\nurl = \"http://127.0.0.1:9\"\npublic_key = \"keys/w2.pem\"\ntimeout_ms = 500\n";
    let c = with("witness_quorum = 2", two).unwrap();
    assert_eq!(c.witnesses.len(), 2);
    assert_eq!(c.witness_quorum, Some(2));
    assert_eq!(c.witnesses[1].timeout, Duration::from_millis(500));
    assert_eq!(c.witnesses[0].timeout, Duration::from_millis(10_000));
    assert!(Config::parse("e", EMBEDDED, &env(&[]))
        .unwrap()
        .witnesses
        .is_empty());
    for (quorum, tables, field) in [
        ("witness_quorum = 3", two.to_string(), "witness_quorum"),
        ("witness_quorum = 0", two.to_string(), "witness_quorum"),
        ("witness_quorum = 1", String::new(), "witness_quorum"),
        (
            "",
            two.replace("w.example/2", "w.example/1"),
            "witnesses[1].name",
        ),
        (
            "",
            two.replace("w.example/2", "w example"),
            "witnesses[1].name",
        ),
        (
            "",
            two.replace("https://w1.example", "ftp://w1.example"),
            "witnesses[0].url",
        ),
        (
            "",
            two.replace("timeout_ms = 500", "timeout_ms = 0"),
            "witnesses[1].timeout_ms",
        ),
        (
            "",
            two.replace("public_key = \"keys/w1.pem\"", "public_key = \"\""),
            "witnesses[0].public_key",
        ),
        ("", format!("{two}colour = 1\n"), "colour"),
    ] {
        let e = with(quorum, &tables).unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
}

#[test]
fn bad_configs_name_the_field() {
    let cases = [
        (
            EMBEDDED.replace("max_retries = 2", "max_retries = 3"),
            "max_retries",
        ),
        (
            EMBEDDED.replace("store = \"file://./var/store\"", "store = \"ftp://x\""),
            "store",
        ),
        (
            EMBEDDED.replace("run_rmb = 5.0", "run_rmb = -1.0"),
            "run_rmb",
        ),
        (
            EMBEDDED.replace("[budget]", "[budget]\nsurprise = 1"),
            "surprise",
        ),
        (
            EMBEDDED.replace("prompt = \"judge-b\"", "prompt = \"judge-a\""),
            "prompt",
        ),
        ("not toml [".to_string(), "config"),
    ];
    for (text, needle) in cases {
        let e = Config::parse("x.toml", &text, &env(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{needle}: {e}");
    }
    let e = Config::parse(
        "x",
        EMBEDDED,
        &env(&[("SEAL_JUDGE_B_URL", "http://example.com/v1")]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("loopback"), "{e}");
    let e = Config::parse("x", EMBEDDED, &env(&[("SEAL_JUDGE_TIMEOUT_MS", "soon")])).unwrap_err();
    assert!(e.to_string().contains("SEAL_JUDGE_TIMEOUT_MS"), "{e}");
}

/// A bad value from an environment variable is the variable's error, not the file's: the
/// message starts with the variable and says what it overrides (issue 49, item 4).
#[test]
fn an_override_s_error_names_the_variable_as_its_source() {
    let cases = [
        (
            "SEAL_JUDGE_A_URL",
            "notaurl",
            "judges.a.base_url of cfg.toml",
        ),
        (
            "SEAL_JUDGE_B_URL",
            "ftp://judge/v1",
            "judges.b.base_url of cfg.toml",
        ),
        (
            "SEAL_JUDGE_A_URL",
            "http://example.com/v1",
            "judges.a.base_url of cfg.toml",
        ),
        (
            "SEAL_JUDGE_TIMEOUT_MS",
            "soon",
            "judges.*.timeout_ms of cfg.toml",
        ),
        (
            "SEAL_JUDGE_BREAKER_FAILURES",
            "-1",
            "server.judge_breaker_failures of cfg.toml",
        ),
    ];
    for (var, value, overrides) in cases {
        let e = Config::parse("cfg.toml", EMBEDDED, &env(&[(var, value)]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "environment variable {var} (overrides {overrides}): "
            )),
            "{var}={value}: {e}"
        );
        assert!(!e.starts_with("config "), "{e}");
    }
    // The file's own value is still the file's.
    let e = Config::parse(
        "cfg.toml",
        &EMBEDDED.replace("https://dashscope", "ftp://dashscope"),
        &env(&[]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("config cfg.toml: judges.a.base_url: "), "{e}");
}

/// The embedded config with `line` added to judge slot a.
fn slot_a_with(line: &str) -> String {
    EMBEDDED.replacen(
        "api_key_env = \"DASHSCOPE_API_KEY\"\n",
        &format!("api_key_env = \"DASHSCOPE_API_KEY\"\n{line}\n"),
        1,
    )
}

#[test]
fn plain_http_beyond_loopback_needs_allow_plain_http() {
    let gateway = [("SEAL_JUDGE_A_URL", "http://litellm.ai.svc:4000/v1")];
    let e = Config::parse("t", EMBEDDED, &env(&gateway)).unwrap_err();
    assert!(e.to_string().contains("judges.a.allow_plain_http"), "{e}");
    let c = Config::parse("t", &slot_a_with("allow_plain_http = true"), &env(&gateway)).unwrap();
    assert!(c.a.allow_plain_http);
    assert_eq!(
        c.a.endpoint(),
        "http://litellm.ai.svc:4000/v1/chat/completions"
    );
}

#[test]
fn judge_credentials_name_every_missing_key_and_header_variable() {
    let text = slot_a_with("headers = { \"api-key\" = \"GATEWAY_KEY\" }");
    let c = Config::parse("t", &text, &env(&[("SEAL_JUDGE_B_KEY", "sk-b-123456789")])).unwrap();
    let e = c.judge_credentials().unwrap_err().to_string();
    assert!(
        e.contains("judge a: DASHSCOPE_API_KEY (or SEAL_JUDGE_A_KEY) is not set"),
        "{e}"
    );
    assert!(
        e.contains("judge a: GATEWAY_KEY (the value of header api-key) is not set"),
        "{e}"
    );
    assert!(!e.contains("judge b"), "{e}");
    let all = env(&[
        ("SEAL_JUDGE_A_KEY", "sk-a-1"),
        ("SEAL_JUDGE_B_KEY", "sk-b-1"),
        ("GATEWAY_KEY", "g-1"),
    ]);
    let c = Config::parse("t", &text, &all).unwrap();
    assert!(c.judge_credentials().is_ok());
    assert_eq!(
        c.a.headers[0].value.as_ref().map(Secret::expose),
        Some("g-1")
    );
    let none = Config::parse(
        "t",
        &slot_a_with("auth = \"none\""),
        &env(&[("DASHSCOPE_API_KEY", "sk-x-123")]),
    )
    .unwrap();
    assert_eq!(none.a.auth, JudgeAuth::None);
    assert!(none.a.api_key.is_none(), "auth = none sends no key");
}

#[test]
fn a_header_seal_sets_itself_is_refused() {
    for name in ["Authorization", "x-session-id", "bad name"] {
        let text = slot_a_with(&format!("headers = {{ \"{name}\" = \"V\" }}"));
        let e = Config::parse("t", &text, &env(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is not a header name seal may send"),
            "{name}: {e}"
        );
    }
}

/// The memory budget of roll requests is `limits.request_memory_bytes`; a config written with
/// its earlier name, `admission_bytes`, still means the same; both at once is refused.
#[test]
fn the_request_memory_budget_reads_its_earlier_name_too() {
    let c = Config::parse("embedded", EMBEDDED, &env(&[])).unwrap();
    assert_eq!(c.request_memory_bytes, 1 << 30);
    let old = EMBEDDED.replace("request_memory_bytes = ", "admission_bytes = 4096 #");
    assert_ne!(old, EMBEDDED, "the embedded config names the budget");
    let c = Config::parse("old", &old, &env(&[])).unwrap();
    assert_eq!(c.request_memory_bytes, 4096);
    let both = EMBEDDED.replace(
        "request_memory_bytes = ",
        "admission_bytes = 4096\nrequest_memory_bytes = ",
    );
    let e = Config::parse("both", &both, &env(&[])).unwrap_err();
    assert!(e.to_string().contains("request_memory_bytes"), "{e}");
}

#[test]
fn a_base_url_ending_in_the_endpoint_is_taken_as_the_base_and_noted_with_its_source() {
    let full = [(
        "SEAL_JUDGE_A_URL",
        "http://127.0.0.1:9/v1/chat/completions/",
    )];
    let c = Config::parse("t", EMBEDDED, &env(&full)).unwrap();
    assert_eq!(c.a.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
    let note = c.a.base_url_note.as_deref().unwrap_or_default();
    assert!(
        note.starts_with("SEAL_JUDGE_A_URL ends in /chat/completions"),
        "{note}"
    );
    assert!(
        note.contains("using http://127.0.0.1:9/v1 as the base URL"),
        "{note}"
    );
    assert!(c.b.base_url_note.is_none());

    let text = EMBEDDED.replacen(
        "https://dashscope.aliyuncs.com/compatible-mode/v1\"",
        "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions\"",
        1,
    );
    let c = Config::parse("config/x.toml", &text, &env(&[])).unwrap();
    assert_eq!(
        c.a.endpoint(),
        "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions"
    );
    let note = c.a.base_url_note.as_deref().unwrap_or_default();
    assert!(
        note.starts_with("judges.a.base_url of config/x.toml ends in /chat/completions"),
        "{note}"
    );
    // User info (a gateway's password) is never shown.
    let with_user = [(
        "SEAL_JUDGE_A_URL",
        "https://u:pw-secret@gw.example/v1/chat/completions",
    )];
    let c = Config::parse("t", EMBEDDED, &env(&with_user)).unwrap();
    assert_eq!(
        c.a.shown_endpoint(),
        "https://gw.example/v1/chat/completions"
    );
    assert!(!c
        .a
        .base_url_note
        .as_deref()
        .unwrap_or_default()
        .contains("pw-secret"));
    // A plain base URL is left as it is, without a note.
    let c = Config::parse("t", EMBEDDED, &env(&[])).unwrap();
    assert!(c.a.base_url_note.is_none() && c.b.base_url_note.is_none());
}
