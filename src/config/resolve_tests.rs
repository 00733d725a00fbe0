use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    parse_str(
        text,
        ConfigSource::File(PathBuf::from("test.toml")),
        &no_env,
    )
}

#[test]
fn example_config_parses_with_every_key() {
    let text = include_str!("../../config.example.toml");
    let config = parse(text).expect("config.example.toml must parse");
    assert_eq!(config.endpoints.len(), 4);
    let lm = &config.endpoints[0];
    assert_eq!(lm.name, "lmstudio");
    assert_eq!(lm.base_url, "http://127.0.0.1:1234/v1");
    assert_eq!(lm.api_key.as_deref(), Some("lm-studio"));
    assert_eq!(lm.context_window, Some(32768));
    assert_eq!(lm.max_tokens, Some(4096));
    assert_eq!(lm.temperature, Some(0.7));
    assert_eq!(
        lm.headers,
        vec![("X-Title".to_string(), "hearth".to_string())]
    );
    assert_eq!(lm.timeouts.first_token, Duration::from_secs(300));
    assert_eq!(config.endpoints[3].tool_format, ToolFormat::Hermes);
    assert_eq!(config.default_mode, Mode::Ask);
    assert_eq!(config.agent.max_turn_requests, 50);
    assert_eq!(config.log.file, Some(PathBuf::from("/tmp/hearth.log")));
}

#[test]
fn unknown_key_is_rejected_with_its_name_and_line() {
    let text = "[[endpoints]]\nname = \"a\"\nbase_url = \"http://x/v1\"\nmodle = \"typo\"\n";
    let err = parse(text).unwrap_err().to_string();
    assert!(err.contains("modle"), "{err}");
    assert!(err.contains("line 4"), "{err}");
}

#[test]
fn wrong_type_is_rejected_with_its_line() {
    let err = parse("[agent]\nmax_turn_requests = \"ten\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 2"), "{err}");
    assert!(err.contains("max_turn_requests"), "{err}");
}

#[test]
fn bad_values_name_key_and_line() {
    let cases = [
        (
            "[[endpoints]]\nname = \"a\"\nbase_url = \"localhost:8080\"\n",
            "endpoints[0].base_url",
            3,
        ),
        (
            "[[endpoints]]\nname = \"a:b\"\nbase_url = \"http://x/v1\"\n",
            "endpoints[0].name",
            2,
        ),
        (
            "[[endpoints]]\nname = \"a\"\nbase_url = \"http://x/v1\"\nmax_tokens = 0\n",
            "endpoints[0].max_tokens",
            4,
        ),
        (
            "[[endpoints]]\nname = \"a\"\nbase_url = \"http://x/v1\"\n[endpoints.timeouts]\nidle_secs = -1.0\n",
            "endpoints[0].timeouts.idle_secs",
            5,
        ),
        (
            "[[endpoints]]\nname = \"a\"\nbase_url = \"http://x/v1\"\n[[endpoints]]\nname = \"a\"\nbase_url = \"http://y/v1\"\n",
            "endpoints[1].name",
            5,
        ),
        (
            "[agent]\nmax_turn_requests = 0\n",
            "agent.max_turn_requests",
            2,
        ),
    ];
    for (text, key, line) in cases {
        match parse(text) {
            Err(ConfigError::Value {
                key: k, line: l, ..
            }) => {
                assert_eq!((k.as_str(), l), (key, line), "for {text:?}");
            }
            other => panic!("expected a value error for {text:?}, got {other:?}"),
        }
    }
}

/// A server called `local` would shadow the built-in engine (or be taken for it): the name is
/// refused, whether the engine is on or not, with the reason.
#[test]
fn an_endpoint_may_not_take_the_engines_name() {
    for text in [
        "[[endpoints]]\nname = \"local\"\nbase_url = \"http://x/v1\"\n[local]\n",
        "[[endpoints]]\nname = \" local \"\nbase_url = \"http://x/v1\"\n",
        "[local]\nenabled = false\n[[endpoints]]\nname = \"local\"\nbase_url = \"http://x/v1\"\n",
    ] {
        match parse(text) {
            Err(err @ ConfigError::Value { .. }) => {
                let message = err.to_string();
                assert!(message.contains("endpoints[0].name"), "{message}");
                assert!(message.contains("built-in engine"), "{message}");
            }
            other => panic!("expected a value error for {text:?}, got {other:?}"),
        }
    }
}

#[test]
fn bad_mode_is_rejected() {
    let err = parse("default_mode = \"yolo\"\n").unwrap_err().to_string();
    assert!(
        err.contains("yolo") || err.contains("default_mode"),
        "{err}"
    );
}

#[test]
fn api_key_env_is_read_through_the_env_lookup() {
    let env = |k: &str| (k == "MY_KEY").then(|| "sekrit".to_string());
    let text =
        "[[endpoints]]\nname = \"a\"\nbase_url = \"http://x/v1\"\napi_key_env = \"MY_KEY\"\n";
    let config = parse_str(text, ConfigSource::Defaults, &env).unwrap();
    assert_eq!(config.endpoints[0].api_key.as_deref(), Some("sekrit"));
}

#[test]
fn environment_adds_a_single_endpoint_first() {
    let env = |k: &str| match k {
        "HEARTH_BASE_URL" => Some("http://127.0.0.1:9/v1/".to_string()),
        "HEARTH_MODEL" => Some("qwen".to_string()),
        "HEARTH_API_KEY" => Some("k".to_string()),
        "HEARTH_LOG_FILE" => Some("/tmp/x.log".to_string()),
        _ => None,
    };
    let mut config =
        parse("[[endpoints]]\nname = \"lan\"\nbase_url = \"http://lan/v1\"\n").unwrap();
    apply_env(&mut config, &env).unwrap();
    assert_eq!(config.endpoints[0].name, ENV_ENDPOINT);
    assert_eq!(config.endpoints[0].base_url, "http://127.0.0.1:9/v1");
    assert_eq!(config.endpoints[0].model.as_deref(), Some("qwen"));
    assert_eq!(config.endpoints[1].name, "lan");
    assert_eq!(config.log.file, Some(PathBuf::from("/tmp/x.log")));
}

#[test]
fn bad_environment_url_is_named() {
    let env = |k: &str| (k == "HEARTH_BASE_URL").then(|| "ftp://x".to_string());
    let mut config = parse("").unwrap();
    let err = apply_env(&mut config, &env).unwrap_err().to_string();
    assert!(err.contains("HEARTH_BASE_URL"), "{err}");
}

#[test]
fn explicit_missing_file_is_an_error() {
    let err = load(Some(Path::new("/nonexistent/hearth.toml")), &no_env).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }), "{err}");
}

#[test]
fn assists_can_be_turned_off_and_a_temperature_must_be_one() {
    let config = parse("[agent]\nassists_off = [\"attach_files\", \"loop_guard\"]\n").unwrap();
    assert!(!config.agent.assists.on(super::super::Assist::AttachFiles));
    assert!(!config.agent.assists.on(super::super::Assist::LoopGuard));
    assert!(config.agent.assists.on(super::super::Assist::TextCalls));
    assert!(parse("[agent]\nassists_off = [\"telepathy\"]\n").is_err());
    let config = parse("[local]\ntemperature = 0\n").unwrap();
    assert_eq!(config.local.unwrap().temperature, Some(0.0));
    let text = "[[endpoints]]\nname = \"a\"\nbase_url = \"http://x/v1\"\ntemperature = 3.5\n";
    let err = parse(text).unwrap_err().to_string();
    assert!(
        err.contains("endpoints[0].temperature") && err.contains("line 4"),
        "{err}"
    );
}

#[test]
fn a_syntax_error_never_shows_a_secret() {
    for text in [
        "[[endpoints]]\nname = \"a\"\nbase_url = \"http://h/v1\"\napi_key = \"sk-SECRET123\" x\n",
        "[[endpoints]]\nname = \"a\"\nbase_url = \"http://h/v1\"\napi_key = 5\nmodel = \"sk-SECRET123\"\n",
        "[[endpoints]]\nname = \"a\"\nbase_url = \"http://h/v1\"\nheaders = { Authorization = 7, X = \"sk-SECRET123\" }\n",
        "[[endpoints]]\nname = \"a\"\nbase_url = \"http://h/v1\"\nheaders = \"Bearer sk-SECRET123\"\n",
    ] {
        let err = parse(text).unwrap_err().to_string();
        assert!(!err.contains("SECRET"), "{err}");
        assert!(err.contains("line "), "{err}");
    }
}

#[test]
fn the_prompt_cache_is_on_unless_turned_off() {
    let on = parse("[local]\n").unwrap().local.unwrap();
    assert_eq!(on.prompt_cache, None);
    let off = parse("[local]\nprompt_cache = false\n")
        .unwrap()
        .local
        .unwrap();
    assert_eq!(off.prompt_cache, Some(false));
    let err = parse("[local]\nprompt_cache = \"no\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("prompt_cache"), "{err}");
}
