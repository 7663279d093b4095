// Package s3 keeps WARC files in S3-compatible object storage (AWS S3,
// MinIO, SeaweedFS, Ceph RGW, …) through minio-go: the object-storage
// backend of Wayside's WARC-file storage.
//
// A location is a URL, s3://BUCKET/PREFIX?endpoint=http://HOST:PORT (the
// endpoint for a store other than AWS; region= and path-style= optional).
// Credentials are never taken from the URL (one carrying user information
// is refused) and never logged: they come from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN), or the shared credentials file
// (~/.aws/credentials, AWS_PROFILE).
//
// Objects are read by range (Object.ReadAt issues ranged GETs), so a
// reader seeks to a record's offset as it does in a local file. Upload
// puts a closed local file and proves the copy before it returns: the
// object is read back whole by ranged GETs and its SHA-256 and size must
// equal the local file's; an object that does not is removed and the
// upload fails, so a caller deletes its local copy only after Upload
// returned nil.
package s3
