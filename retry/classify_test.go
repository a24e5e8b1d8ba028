package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/toolguard/toolguard/retry"
)

// Paths are relative to the module cache (/root/go/pkg/mod/...). The texts
// are built exactly as those lines build them; the bodies inside are what the
// providers' APIs send.
const (
	openaiChat    = "github.com/tmc/langchaingo@v0.1.14/llms/openai/internal/openaiclient/chat.go:515-524"
	openaiClient  = "github.com/tmc/langchaingo@v0.1.14/llms/openai/internal/openaiclient/openaiclient.go:216-243"
	openaiStream  = "github.com/tmc/langchaingo@v0.1.14/llms/openai/internal/openaiclient/chat.go:596,655"
	anthropicErr  = "github.com/tmc/langchaingo@v0.1.14/llms/anthropic/internal/anthropicclient/anthropicclient.go:221-229 via anthropicllm.go:166"
	anthropicSend = "github.com/tmc/langchaingo@v0.1.14/llms/anthropic/internal/anthropicclient/anthropicclient.go:209"
	anthropicEvt  = "github.com/tmc/langchaingo@v0.1.14/llms/anthropic/internal/anthropicclient/messages.go:329"
	googleAPIErr  = "github.com/googleapis/gax-go/v2@v2.12.4/apierror/apierror.go:203-212 (googleai via genai REST client)"
	googleRaw     = "google.golang.org/api@v0.183.0/googleapi/googleapi.go:94-96"
	googleStream  = "github.com/tmc/langchaingo@v0.1.14/llms/googleai/googleai.go:374"
	genaiBlocked  = "github.com/google/generative-ai-go@v0.15.1/genai/client.go:353"
	vertexGRPC    = "gRPC status text (llms/googleai/vertex uses cloud.google.com/go/vertexai over gRPC)"
	ollamaStatus  = "github.com/tmc/langchaingo@v0.1.14/llms/ollama/internal/ollamaclient/types.go:16-28 (StatusError), ollamaclient.go:163-168"
	ollamaText    = "github.com/tmc/langchaingo@v0.1.14/llms/ollama/internal/ollamaclient/ollamaclient.go:160"
	ollamaPull    = "github.com/tmc/langchaingo@v0.1.14/llms/ollama/ollamallm.go:102,346,369"
	mistralHTTP   = "github.com/gage-technologies/mistral-go@v1.1.0/client.go:113"
	mistralStream = "github.com/gage-technologies/mistral-go@v1.1.0/chat.go:174"
	bedrockAWS    = "github.com/aws/smithy-go@v1.22.2/errors.go:60 + aws-sdk-go-v2@v1.36.3/aws/transport/http/response_error.go:25 + service/bedrockruntime@v1.24.3/types/errors.go"
	bedrockRetry  = "github.com/aws/aws-sdk-go-v2@v1.36.3/aws/retry/errors.go:13"
	bedrockQuota  = "github.com/aws/aws-sdk-go-v2@v1.36.3/aws/retry/standard.go:253 + aws/ratelimit/token_rate_limit.go:81"
	bedrockLLM    = "github.com/tmc/langchaingo@v0.1.14/llms/bedrock/internal/bedrockclient/provider_anthropic.go:218-220"
)

type classifyCase struct {
	name   string
	source string
	err    error
	want   bool
}

func bedrock(status int, rest string) error {
	return fmt.Errorf("operation error Bedrock Runtime: InvokeModel, https response error StatusCode: %d, RequestID: 4d1f5f1e-8b4c-4a43-9b6e-2a1d6e0c9f10, %s", status, rest)
}

func providerCases() []classifyCase {
	connRefused := &url.Error{Op: "Post", URL: "http://127.0.0.1:11434/api/chat", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	return []classifyCase{
		// OpenAI (and Azure OpenAI, same client).
		{"openai 429 rate limit", openaiChat, errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 1.2s. Visit https://platform.openai.com/account/rate-limits to learn more."), true},
		{"openai 429 insufficient quota", openaiChat, errors.New("API returned unexpected status code: 429: You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."), false},
		{"azure openai 429 retry after", openaiChat, errors.New("API returned unexpected status code: 429: Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."), true},
		{"openai 500", openaiChat, errors.New("API returned unexpected status code: 500: The server had an error while processing your request. Sorry about that!"), true},
		{"openai 502 without body", openaiChat, errors.New("API returned unexpected status code: 502"), true},
		{"openai 503 overloaded", openaiChat, errors.New("API returned unexpected status code: 503: The engine is currently overloaded, please try again later"), true},
		{"openai 504", openaiChat, errors.New("API returned unexpected status code: 504"), true},
		{"openai 401", openaiChat, errors.New("API returned unexpected status code: 401: Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys."), false},
		{"openai 400 context length", openaiChat, errors.New("API returned unexpected status code: 400: This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."), false},
		{"openai 400 content filter", openaiChat, errors.New("API returned unexpected status code: 400: The response was filtered due to the prompt triggering Azure OpenAI's content management policy."), false},
		{"openai 403", openaiChat, errors.New("API returned unexpected status code: 403"), false},
		{"openai 404 model", openaiChat, errors.New("API returned unexpected status code: 404: The model `gpt-5-turbo` does not exist or you do not have access to it."), false},
		{"openai sanitized deadline", openaiClient, errors.New("request timeout: API call exceeded deadline"), true},
		{"openai sanitized cancel", openaiClient, errors.New("request cancelled"), false},
		{"openai sanitized net timeout", openaiClient, errors.New("request timeout: network operation exceeded timeout"), true},
		{"openai sanitized net error", openaiClient, errors.New("network error: failed to reach API server"), true},
		{"openai stream broken", openaiStream, fmt.Errorf("error reading streaming response: %w", io.ErrUnexpectedEOF), true},
		{"openai caller's streaming func", openaiStream, fmt.Errorf("streaming func returned an error: %w", syscall.ECONNRESET), false},
		{"openai empty response", "github.com/tmc/langchaingo@v0.1.14/llms/openai/internal/openaiclient/openaiclient.go:18", errors.New("empty response"), false},

		// Anthropic.
		{"anthropic 529 overloaded", anthropicErr, errors.New("anthropic: failed to create message: API returned unexpected status code: 529: Overloaded"), true},
		{"anthropic 429", anthropicErr, errors.New("anthropic: failed to create message: API returned unexpected status code: 429: Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."), true},
		{"anthropic 500", anthropicErr, errors.New("anthropic: failed to create message: API returned unexpected status code: 500: Internal server error"), true},
		{"anthropic 401", anthropicErr, errors.New("anthropic: failed to create message: API returned unexpected status code: 401: invalid x-api-key"), false},
		{"anthropic 400 credit balance", anthropicErr, errors.New("anthropic: failed to create message: API returned unexpected status code: 400: Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."), false},
		{"anthropic 400 prompt too long", anthropicErr, errors.New("anthropic: failed to create message: API returned unexpected status code: 400: prompt is too long: 215000 tokens > 200000 maximum"), false},
		{"anthropic 413", anthropicErr, errors.New("anthropic: failed to create message: API returned unexpected status code: 413: Request exceeds the maximum allowed number of bytes."), false},
		{"anthropic stream overloaded", anthropicEvt, fmt.Errorf("anthropic: failed to create message: %w", errors.New("received error event: map[error:map[message:Overloaded type:overloaded_error] type:error]")), true},
		{"anthropic stream api_error", anthropicEvt, errors.New("anthropic: failed to create message: received error event: map[error:map[message:Internal server error type:api_error] type:error]"), true},
		{"anthropic connection refused", anthropicSend, fmt.Errorf("anthropic: failed to create message: %w", fmt.Errorf("send request: %w",
			&url.Error{Op: "Post", URL: "https://api.anthropic.com/v1/messages", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}})), true},
		{"anthropic connection reset", anthropicSend, fmt.Errorf("anthropic: failed to create message: %w", fmt.Errorf("send request: %w",
			&url.Error{Op: "Post", URL: "https://api.anthropic.com/v1/messages", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}})), true},
		{"anthropic no response", "github.com/tmc/langchaingo@v0.1.14/llms/anthropic/anthropicllm.go:19", errors.New("no response"), false},

		// Google AI (REST, through gax) and Vertex AI (gRPC).
		{"googleai 429 exhausted", googleAPIErr, errors.New("googleapi: Error 429: Resource has been exhausted (e.g. check quota)."), true},
		{"googleai 429 quota with retry info", googleAPIErr, errors.New("googleapi: Error 429: You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\nerror details: retry in 24s"), true},
		{"googleai 503 overloaded", googleAPIErr, errors.New("googleapi: Error 503: The model is overloaded. Please try again later."), true},
		{"googleai 500", googleAPIErr, errors.New("googleapi: Error 500: An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"), true},
		{"googleai 400 api key", googleAPIErr, errors.New("googleapi: Error 400: API key not valid. Please pass a valid API key."), false},
		{"googleai 404 model", googleAPIErr, errors.New("googleapi: Error 404: models/gemini-9 is not found for API version v1beta, or is not supported for generateContent."), false},
		{"googleai stream 503", googleStream, fmt.Errorf("error in stream mode: %w", errors.New("googleapi: Error 503: The model is overloaded. Please try again later.")), true},
		{"googleapi raw 502", googleRaw, errors.New("googleapi: got HTTP response code 502 with body: <html><title>502 Bad Gateway</title></html>"), true},
		{"genai blocked", genaiBlocked, errors.New("blocked: candidate: FinishReasonSafety"), false},
		{"googleai no content", "github.com/tmc/langchaingo@v0.1.14/llms/googleai/googleai.go:19", errors.New("no content in generation response"), false},
		{"vertex resource exhausted", vertexGRPC, errors.New("rpc error: code = ResourceExhausted desc = Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model with base model: gemini-1.5-pro. Please submit a quota increase request."), true},
		{"vertex unavailable", vertexGRPC, errors.New("rpc error: code = Unavailable desc = The service is currently unavailable."), true},
		{"vertex invalid argument", vertexGRPC, errors.New("rpc error: code = InvalidArgument desc = Request contains an invalid argument."), false},
		{"vertex permission denied", vertexGRPC, errors.New("rpc error: code = PermissionDenied desc = Permission denied on resource project my-project."), false},

		// Ollama.
		{"ollama 503 status", ollamaStatus, errors.New("503 Service Unavailable"), true},
		{"ollama 429 status", ollamaStatus, errors.New("429 Too Many Requests"), true},
		{"ollama 500 status with message", ollamaStatus, errors.New("500 Internal Server Error: llama runner process has terminated: signal: killed"), true},
		{"ollama 401 status", ollamaStatus, errors.New("401 Unauthorized"), false},
		{"ollama 404 status", ollamaStatus, errors.New("404 Not Found"), false},
		{"ollama model not found", ollamaText, errors.New(`model "llama3" not found, try pulling it first`), false},
		{"ollama server busy", ollamaText + " (text of the Ollama server's ErrMaxQueue)", errors.New("server busy, please try again.  maximum pending requests exceeded"), true},
		{"ollama connection refused", "net/http via ollamaclient.go:149", connRefused, true},
		{"ollama pull timeout", ollamaPull, fmt.Errorf("ollama model pull error: %w", fmt.Errorf("%w: %w", errors.New("ollama model pull deadline exceeded"), context.DeadlineExceeded)), true},

		// Mistral (gage-technologies/mistral-go, which langchaingo's mistral wraps).
		{"mistral 429", mistralHTTP, errors.New(`(HTTP Error 429) {"object":"error","message":"Requests rate limit exceeded","type":"rate_limited","param":null,"code":"1300"}`), true},
		{"mistral 503", mistralHTTP, errors.New("(HTTP Error 503) upstream connect error or disconnect/reset before headers. reset reason: overflow"), true},
		{"mistral 401", mistralHTTP, errors.New(`(HTTP Error 401) {"message":"Unauthorized","request_id":"0a1b2c"}`), false},
		{"mistral 400 too long", mistralHTTP, errors.New(`(HTTP Error 400) {"object":"error","message":"Prompt contains 40000 tokens, too large for model with 32768 maximum context length","type":"invalid_request_error"}`), false},
		{"mistral stream broken", mistralStream, fmt.Errorf("error reading stream response: %w", io.ErrUnexpectedEOF), true},
		{"mistral client timeout", "net/http Client.Timeout (mistral-go client.go:93)", &url.Error{Op: "Post", URL: "https://api.mistral.ai/v1/chat/completions", Err: timeoutErr{}}, true},

		// Bedrock (aws-sdk-go-v2 error chain, printed).
		{"bedrock throttling after sdk retries", bedrockRetry, errors.New("operation error Bedrock Runtime: InvokeModel, exceeded maximum number of attempts, 3, https response error StatusCode: 429, RequestID: 4d1f5f1e, ThrottlingException: Too many requests, please wait before trying again."), true},
		{"bedrock 503", bedrockAWS, bedrock(503, "ServiceUnavailableException: Bedrock is unable to process your request."), true},
		{"bedrock 500", bedrockAWS, bedrock(500, "InternalServerException: An internal server error occurred. Retry your request."), true},
		{"bedrock 408 model timeout", bedrockAWS, bedrock(408, "ModelTimeoutException: Model has timed out in processing the request. Try your request again."), true},
		{"bedrock 429 model not ready", bedrockAWS, bedrock(429, "ModelNotReadyException: Model is not ready to serve inference requests."), true},
		{"bedrock 424 model error", bedrockAWS, bedrock(424, "ModelErrorException: The request failed due to an error while processing the model."), false},
		{"bedrock 400 validation", bedrockAWS, bedrock(400, "ValidationException: Input is too long for requested model."), false},
		{"bedrock 403 access denied", bedrockAWS, bedrock(403, "AccessDeniedException: You don't have access to the model with the specified model ID."), false},
		{"bedrock 400 service quota", bedrockAWS, bedrock(400, "ServiceQuotaExceededException: Your request exceeds the service quota for your account."), false},
		{"bedrock sdk retry budget spent", bedrockQuota, errors.New("operation error Bedrock Runtime: InvokeModel, failed to get rate limit token, retry quota exceeded, 0 available, 5 requested"), false},
		{"bedrock max tokens", bedrockLLM, errors.New("completed due to max_tokens. Maybe try increasing max tokens"), false},
		{"bedrock typed throttling", bedrockAWS, &operationError{Err: &responseError{status: 429, Err: &awsAPIError{code: "ThrottlingException", msg: "Rate exceeded"}}}, true},
		{"bedrock typed validation", bedrockAWS, &operationError{Err: &responseError{status: 400, Err: &awsAPIError{code: "ValidationException", msg: "Malformed input request"}}}, false},
		{"bedrock stream exception", bedrockAWS + " (event stream: no HTTP status)", &awsAPIError{code: "ModelStreamErrorException", msg: "An error occurred while streaming the response. Retry your request."}, true},
	}
}

func TestIsRetryableProviderErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range providerCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := retry.IsRetryable(tc.err); got != tc.want {
				t.Errorf("IsRetryable(%q) = %v, want %v\n(source: %s)", tc.err, got, tc.want, tc.source)
			}
			wrapped := fmt.Errorf("agent: step 3: %w", tc.err)
			if got := retry.IsRetryable(wrapped); got != tc.want {
				t.Errorf("IsRetryable(%q) = %v, want %v (wrapped with %%w)", wrapped, got, tc.want)
			}
		})
	}
}

func TestIsRetryableGoErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"context canceled", context.Canceled, false},
		{"wrapped context canceled", fmt.Errorf("send request: %w", context.Canceled), false},
		{"context deadline (inner timeout)", context.DeadlineExceeded, true},
		{"net timeout", timeoutErr{}, true},
		{"net error, not a timeout", notTimeoutErr{}, false},
		{"dial connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"read connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"EOF from the HTTP client", &url.Error{Op: "Post", URL: "https://api.example.com", Err: io.EOF}, true},
		{"bare EOF", io.EOF, false},
		{"no such host", &url.Error{Op: "Post", URL: "https://api.openai.invalid", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.openai.invalid", IsNotFound: true}}}, false},
		{"temporary DNS failure", &net.DNSError{Err: "server misbehaving", Name: "api.openai.com", IsTemporary: true}, true},
		{"typed status 503", statusErr(503), true},
		{"typed status 529", statusErr(529), true},
		{"typed status 408", statusErr(408), true},
		{"typed status 409", statusErr(409), true},
		{"typed status 501", statusErr(501), false},
		{"typed status 401", statusErr(401), false},
		{"typed status 422", statusErr(422), false},
		{"google typed 429", googleErr{code: 429, msg: "googleapi: Error 429: Resource has been exhausted (e.g. check quota)."}, true},
		{"google typed gRPC -1 falls back to text", googleErr{code: -1, msg: "rpc error: code = Unavailable desc = try later"}, true},
		{"typed status wins over text", googleErr{code: 400, msg: "service unavailable"}, false},
		{"retry.Error is not retried again", &retry.Error{Attempts: 3, Err: errors.New("API returned unexpected status code: 503")}, false},
		{"unknown error", errors.New("json: cannot unmarshal number into Go value of type string"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := retry.IsRetryable(tc.err); got != tc.want {
				t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
			}
			if tc.err == nil {
				return
			}
			if got := retry.IsRetryable(fmt.Errorf("wrapped: %w", tc.err)); got != tc.want {
				t.Errorf("IsRetryable(wrapped %v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestIsRetryableLoopback classifies errors Go's HTTP client really returns,
// against servers on the loopback interface.
func TestIsRetryableLoopback(t *testing.T) {
	t.Parallel()
	post := func(client *http.Client, u string) error {
		resp, err := client.Post(u, "application/json", nil)
		if err == nil {
			resp.Body.Close()
			return errors.New("request succeeded")
		}
		return err
	}

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		err = post(http.DefaultClient, "http://"+addr)
		if !retry.IsRetryable(err) {
			t.Errorf("IsRetryable(%q) = false, want true", err)
		}
	})
	t.Run("server closes the connection", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		err := post(srv.Client(), srv.URL)
		if !retry.IsRetryable(err) {
			t.Errorf("IsRetryable(%q) = false, want true", err)
		}
	})
	t.Run("client timeout", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}))
		defer srv.Close()
		client := srv.Client()
		client.Timeout = time.Millisecond
		err := post(client, srv.URL)
		if !retry.IsRetryable(err) {
			t.Errorf("IsRetryable(%q) = false, want true", err)
		}
	})
}

type timeoutErr struct{}

func (timeoutErr) Error() string {
	return "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
}
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

type notTimeoutErr struct{}

func (notTimeoutErr) Error() string   { return "use of closed network connection" }
func (notTimeoutErr) Timeout() bool   { return false }
func (notTimeoutErr) Temporary() bool { return false }

type statusErr int

func (e statusErr) Error() string   { return fmt.Sprintf("http status %d", int(e)) }
func (e statusErr) StatusCode() int { return int(e) }

// googleErr stands in for gax's *apierror.APIError.
type googleErr struct {
	code int
	msg  string
}

func (e googleErr) Error() string { return e.msg }
func (e googleErr) HTTPCode() int { return e.code }

// operationError, responseError and awsAPIError stand in for smithy-go's
// *OperationError, aws-sdk-go-v2's *http.ResponseError and a Bedrock Runtime
// exception, with the same methods and texts.
type operationError struct{ Err error }

func (e *operationError) Error() string {
	return fmt.Sprintf("operation error Bedrock Runtime: InvokeModel, %v", e.Err)
}
func (e *operationError) Unwrap() error { return e.Err }

type responseError struct {
	status int
	Err    error
}

func (e *responseError) Error() string {
	return fmt.Sprintf("https response error StatusCode: %d, RequestID: 4d1f5f1e, %v", e.status, e.Err)
}
func (e *responseError) Unwrap() error       { return e.Err }
func (e *responseError) HTTPStatusCode() int { return e.status }

type awsAPIError struct{ code, msg string }

func (e *awsAPIError) Error() string     { return e.code + ": " + e.msg }
func (e *awsAPIError) ErrorCode() string { return e.code }
