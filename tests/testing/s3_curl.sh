# Sourced by the tests that look into a bucket of the test S3 server
# (tests/testing/s3_server.sh) with curl, signing as the server's admin
# (AWS Signature V4). Every call gives up after S3CURL_MAX_TIME seconds
# (default 60) so that a server that stops answering (a full disk) fails
# the test instead of hanging it.
#   s3curl ARGS...          curl against $AWS_ENDPOINT_URL's API; the
#                           credentials are $S3CURL_USER ("KEY:SECRET",
#                           default $AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY)
#   s3_keys BUCKET PREFIX   the keys under PREFIX of BUCKET, one per line

s3curl() {
  curl -sS --fail-with-body --connect-timeout 5 \
    --max-time "${S3CURL_MAX_TIME:-60}" \
    --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
    --user "${S3CURL_USER:-$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY}" \
    -H "x-amz-content-sha256:UNSIGNED-PAYLOAD" "$@"
}

s3_keys() {
  local prefix
  prefix="$(/usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$2")"
  s3curl "$AWS_ENDPOINT_URL/$1?list-type=2&prefix=$prefix" \
    | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g'
}
