mod acp_session;
