-- A message of a customer web chat (service web-ui) is recorded once per
-- external message id; its provider id is the account id and that id.
CREATE UNIQUE INDEX messages_web_ui_id ON messages (service, provider_message_id) WHERE service = 'web-ui';
