//! Every `error_code` the service answers, in one registry: its text and what kind of refusal
//! it is. The API maps a kind to its HTTP status (services know no status codes), and a test
//! holds the OpenAPI document's descriptions to this registry, so the documented codes and
//! statuses cannot drift from the real ones.

/// What kind of refusal a code is (the API gives each its HTTP status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The request is wrong as sent (400).
    Invalid,
    /// No valid token (401).
    Unauthenticated,
    /// The token lacks the scope (403).
    Forbidden,
    /// What it names does not exist, or the caller may not see it (404).
    NotFound,
    /// The method does not apply to the path (405).
    MethodNotAllowed,
    /// The body did not arrive in time (408).
    Timeout,
    /// It conflicts with what exists (409).
    Conflict,
    /// The body is too large (413).
    TooLarge,
    /// The body's media type is not the one taken (415).
    UnsupportedMediaType,
    /// Our fault (500).
    Internal,
    /// A resource is missing for now; nothing was done and the request may be sent again (503).
    Unavailable,
}

macro_rules! error_codes {
    ($($variant:ident = $code:literal : $refusal:ident,)*) => {
        /// An `error_code` of a problem answer.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($variant,)*
        }

        impl ErrorCode {
            /// Every code, for the document's checks.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The code as answers carry it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)*
                }
            }

            pub fn refusal(self) -> Refusal {
                match self {
                    $(ErrorCode::$variant => Refusal::$refusal,)*
                }
            }

            pub fn parse(code: &str) -> Option<ErrorCode> {
                Self::ALL.iter().copied().find(|c| c.as_str() == code)
            }
        }
    };
}

error_codes! {
    AmbiguousDecision = "ambiguous_decision": Conflict,
    ApiKeyNameConflict = "api_key_name_conflict": Conflict,
    ApiKeyNotFound = "api_key_not_found": NotFound,
    CallbackNotFound = "callback_not_found": Invalid,
    CorrelationValueNotComputable = "correlation_value_not_computable": Invalid,
    DataStoreNotFound = "data_store_not_found": NotFound,
    DatabaseUnavailable = "database_unavailable": Unavailable,
    DecisionFailed = "decision_failed": Invalid,
    DecisionNotFound = "decision_not_found": NotFound,
    IdentityProviderUnavailable = "identity_provider_unavailable": Unavailable,
    InternalServerError = "internal_server_error": Internal,
    InvalidApiKeyName = "invalid_api_key_name": Invalid,
    InvalidCallbackBody = "invalid_callback_body": Invalid,
    // an instance error's code (a connector answered a result that cannot be stored), not an
    // answer's
    InvalidConnectorResponse = "invalid_connector_response": Invalid,
    InvalidDataStoreIdentifier = "invalid_data_store_identifier": Invalid,
    InvalidDataStoreKind = "invalid_data_store_kind": Invalid,
    InvalidDataStoreLocation = "invalid_data_store_location": Invalid,
    InvalidDecisionId = "invalid_decision_id": Invalid,
    InvalidExpiry = "invalid_expiry": Invalid,
    InvalidFileName = "invalid_file_name": Invalid,
    InvalidJson = "invalid_json": Invalid,
    InvalidMessageInstanceUuid = "invalid_message_instance_uuid": Invalid,
    InvalidMessageName = "invalid_message_name": Invalid,
    InvalidPath = "invalid_path": Invalid,
    InvalidPayload = "invalid_payload": Invalid,
    InvalidProcessModel = "invalid_process_model": Invalid,
    InvalidProcessModelIdentifier = "invalid_process_model_identifier": Invalid,
    InvalidQuery = "invalid_query": Invalid,
    InvalidScope = "invalid_scope": Invalid,
    InvalidSecretName = "invalid_secret_name": Invalid,
    InvalidSecretValue = "invalid_secret_value": Invalid,
    InvalidSignalName = "invalid_signal_name": Invalid,
    InvalidTimeToLive = "invalid_time_to_live": Invalid,
    InvalidToken = "invalid_token": Unauthenticated,
    MessageInstanceNotFound = "message_instance_not_found": NotFound,
    MessageInstanceUuidConflict = "message_instance_uuid_conflict": Conflict,
    MessageInstanceUuidRequired = "message_instance_uuid_required": Invalid,
    MessageNotAccepted = "message_not_accepted": Invalid,
    MessageStartConflict = "message_start_conflict": Invalid,
    MethodNotAllowed = "method_not_allowed": MethodNotAllowed,
    MigrationNotPossible = "migration_not_possible": Conflict,
    NotAuthorized = "not_authorized": Forbidden,
    NotFound = "not_found": NotFound,
    NotWaiting = "not_waiting": Invalid,
    NotWaitingForCallback = "not_waiting_for_callback": Invalid,
    NothingToRetry = "nothing_to_retry": Conflict,
    PayloadTooLarge = "payload_too_large": TooLarge,
    ProcessIdConflict = "process_id_conflict": Invalid,
    // the callback endpoint's answer for an unknown instance, as the connector-proxy contract
    // asks (400); every other endpoint answers `process_instance_not_found`
    ProcessInstanceCannotBeFound = "process_instance_cannot_be_found": Invalid,
    ProcessInstanceCannotStart = "process_instance_cannot_start": Invalid,
    ProcessInstanceFinished = "process_instance_finished": Conflict,
    ProcessInstanceNotFound = "process_instance_not_found": NotFound,
    ProcessInstanceNotInError = "process_instance_not_in_error": Conflict,
    ProcessInstanceNotSuspended = "process_instance_not_suspended": Conflict,
    ProcessInstanceSuspended = "process_instance_suspended": Conflict,
    ProcessModelFileNotFound = "process_model_file_not_found": NotFound,
    ProcessModelInUse = "process_model_in_use": Conflict,
    ProcessModelNotFound = "process_model_not_found": NotFound,
    ProcessModelVersionNotFound = "process_model_version_not_found": NotFound,
    RequestTimeout = "request_timeout": Timeout,
    ScriptsUnavailable = "scripts_unavailable": Unavailable,
    SecretNotFound = "secret_not_found": NotFound,
    ServiceTaskError = "service_task_error": Invalid,
    TaskNotFound = "task_not_found": Invalid,
    TokenExpired = "token_expired": Unauthenticated,
    UnsupportedMediaType = "unsupported_media_type": UnsupportedMediaType,
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn codes_are_unique_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "{} twice", code.as_str());
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
        }
    }
}
