// S3-compatible object storage (AWS S3, GCS's S3 interoperability, Cloudflare R2, SeaweedFS, …)
// through the maintained AWS client. Credentials, region and endpoint come from the standard AWS
// settings (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, AWS_PROFILE and its files,
// AWS_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL); nothing secret is part of a URI or a config.
import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, S3ServiceException, UploadPartCommand, UploadPartCopyCommand } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { joinKey, parseS3Uri, StorageConfigError, StorageConflictError, type ObjectStat, type PutOptions, type Storage, type StoredObject } from './storage.js';

/** A request the store did not answer or answered with a transient failure (5xx, throttling, no connection). */
export function isTransientStoreError(err: unknown): boolean {
  if (err instanceof StorageConflictError || err instanceof StorageConfigError) return false;
  if (typeof (err as { transient?: unknown })?.transient === 'boolean') return (err as { transient: boolean }).transient;
  const e = err as { name?: string; code?: string; $metadata?: { httpStatusCode?: number }; $retryable?: unknown; cause?: unknown };
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined && (status >= 500 || status === 429 || status === 408)) return true;
  if (e?.$retryable) return true;
  const code = e?.code ?? (e?.cause as { code?: string } | undefined)?.code;
  if (code && /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ENOTFOUND|UND_ERR_SOCKET)$/.test(code)) return true;
  return /TimeoutError|RequestTimeout|SlowDown|ServiceUnavailable|InternalError|NetworkingError|socket hang up/i.test(`${e?.name ?? ''} ${(err as Error)?.message ?? ''}`);
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

const isConflict = (err: unknown) => statusOf(err) === 412 || statusOf(err) === 409 || /PreconditionFailed|ConditionalRequestConflict/.test((err as Error)?.name ?? '');
const isMissing = (err: unknown) => statusOf(err) === 404 || /NoSuchKey|NotFound/.test((err as Error)?.name ?? '');

/** The client every S3 store of this process shares per endpoint and credentials (connections are pooled). */
const clients = new Map<string, S3Client>();

/** The client for the AWS settings in `env`: the keys it names, else the SDK's own chain (profile, SSO, instance role). */
export function s3Client(env: NodeJS.ProcessEnv = process.env): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1';
  const keys = env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY ? { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) } : undefined;
  const maxAttempts = Number(env.AWS_MAX_ATTEMPTS) > 0 ? Number(env.AWS_MAX_ATTEMPTS) : 4;
  // A changed secret (rotated, or mistyped and fixed) is another client: the secret only as a hash in this key.
  const secret = keys ? createHash('sha256').update(`${keys.secretAccessKey}|${keys.sessionToken ?? ''}`).digest('hex') : '';
  const key = `${endpoint ?? ''}|${region}|${env.AWS_PROFILE ?? ''}|${env.AWS_ACCESS_KEY_ID ?? ''}|${secret}|${maxAttempts}`;
  let client = clients.get(key);
  if (!client) {
    // The pinned client works on Node 20; its notice about future releases is not for our users.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    client = new S3Client({
      region,
      ...(endpoint ? { endpoint, forcePathStyle: env.AWS_S3_FORCE_PATH_STYLE !== 'false' } : {}),
      ...(keys ? { credentials: keys } : {}),
      // The client's own retries (with backoff) ride out a blip; longer outages are waited out by
      // the run store's sync (mirror.ts), which knows the activity it is part of. AWS_MAX_ATTEMPTS
      // (the standard setting) changes the budget.
      maxAttempts,
      retryMode: 'standard',
    });
    clients.set(key, client);
  }
  return client;
}

export class S3Storage implements Storage {
  readonly bucket: string;
  readonly prefix: string;

  constructor(
    uri: string,
    private readonly client: S3Client = s3Client(),
  ) {
    const { bucket, prefix } = parseS3Uri(uri);
    this.bucket = bucket;
    this.prefix = prefix;
  }

  private key(path: string): string {
    return joinKey(this.prefix, path);
  }

  url(path = ''): string {
    return `s3://${joinKey(this.bucket, this.prefix, path)}`;
  }

  async get(path: string): Promise<{ data: Buffer; etag: string } | undefined> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(path) }));
      const data = Buffer.from(await res.Body!.transformToByteArray());
      return { data, etag: res.ETag ?? '' };
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw this.named(err, path);
    }
  }

  async stat(path: string): Promise<ObjectStat | undefined> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(path) }));
      return { size: res.ContentLength ?? 0, mtimeMs: res.LastModified?.getTime() ?? 0 };
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw this.named(err, path);
    }
  }

  async getRange(path: string, start: number, end?: number): Promise<{ data: Buffer; size: number } | undefined> {
    const range = start < 0 ? `bytes=${start}` : `bytes=${start}-${end === undefined ? '' : Math.max(start, end - 1)}`;
    if (end !== undefined && start >= 0 && end <= start) {
      const s = await this.stat(path);
      return s && { data: Buffer.alloc(0), size: s.size };
    }
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(path), Range: range }));
      const data = Buffer.from(await res.Body!.transformToByteArray());
      // `bytes 100-199/200`; a server that ignored the range sent the whole object
      const total = /\/(\d+)$/.exec(res.ContentRange ?? '')?.[1];
      if (total !== undefined) return { data, size: Number(total) };
      const size = data.length;
      const from = start < 0 ? Math.max(0, size + start) : Math.min(start, size);
      return { data: data.subarray(from, start < 0 || end === undefined ? size : Math.min(end, size)), size };
    } catch (err) {
      if (isMissing(err)) return undefined;
      // a range past the end (or any range of an empty object)
      if (statusOf(err) === 416 || /InvalidRange/.test((err as Error)?.name ?? '')) {
        const s = await this.stat(path);
        return s && { data: Buffer.alloc(0), size: s.size };
      }
      throw this.named(err, path);
    }
  }

  async put(path: string, data: Uint8Array, opts: PutOptions = {}): Promise<string> {
    try {
      const res = await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(path),
          Body: data,
          ContentLength: data.byteLength,
          ...(opts.ifMatch !== undefined ? { IfMatch: opts.ifMatch } : {}),
          ...(opts.ifNoneMatch ? { IfNoneMatch: '*' } : {}),
        }),
      );
      return res.ETag ?? '';
    } catch (err) {
      // S3 answers a write on the etag of an object deleted since with 404 (NoSuchKey): lost all the same.
      if (isConflict(err) || (opts.ifMatch !== undefined && isMissing(err))) throw new StorageConflictError(this.url(path));
      throw this.named(err, path);
    }
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const base = this.key(prefix);
    const full = base === '' ? '' : `${base}/`;
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      let res;
      try {
        res = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: full, ContinuationToken: token }));
      } catch (err) {
        throw this.named(err, prefix);
      }
      for (const o of res.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue;
        out.push({ path: joinKey(prefix, o.Key.slice(full.length)), size: o.Size ?? 0, etag: o.ETag ?? '' });
      }
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async listDir(prefix: string): Promise<{ dirs: string[]; files: string[] }> {
    const base = this.key(prefix);
    const full = base === '' ? '' : `${base}/`;
    const dirs: string[] = [];
    const files: string[] = [];
    let token: string | undefined;
    do {
      let res;
      try {
        res = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: full, Delimiter: '/', ContinuationToken: token }));
      } catch (err) {
        throw this.named(err, prefix);
      }
      for (const p of res.CommonPrefixes ?? []) if (p.Prefix) dirs.push(p.Prefix.slice(full.length).replace(/\/$/, ''));
      for (const o of res.Contents ?? []) if (o.Key && !o.Key.endsWith('/')) files.push(o.Key.slice(full.length));
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return { dirs: dirs.sort(), files: files.sort() };
  }

  /**
   * The object's first `base.size` bytes, copied inside the store, then `tail`: an append that
   * sends only the new bytes (a multipart upload: the copied part must be at least APPEND_MIN_BYTES).
   * Conditional on the object still being `base.etag`, at the copy and at the completion.
   */
  async append(path: string, base: { etag: string; size: number }, tail: Uint8Array): Promise<string> {
    const Key = this.key(path);
    let uploadId: string | undefined;
    try {
      uploadId = (await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key }))).UploadId;
      const UploadId = uploadId;
      const copied = await this.client.send(
        new UploadPartCopyCommand({ Bucket: this.bucket, Key, UploadId, PartNumber: 1, CopySource: `${this.bucket}/${Key.split('/').map(encodeURIComponent).join('/')}`, CopySourceIfMatch: base.etag, CopySourceRange: `bytes=0-${base.size - 1}` }),
      );
      const added = await this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key, UploadId, PartNumber: 2, Body: tail, ContentLength: tail.byteLength }));
      const done = await this.client.send(
        new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId, IfMatch: base.etag, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: copied.CopyPartResult?.ETag }, { PartNumber: 2, ETag: added.ETag }] } }),
      );
      uploadId = undefined;
      return done.ETag ?? '';
    } catch (err) {
      if (uploadId) await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId: uploadId })).catch(() => undefined);
      if (isConflict(err) || isMissing(err)) throw new StorageConflictError(this.url(path));
      throw this.named(err, path);
    }
  }

  async delete(path: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(path) }));
    } catch (err) {
      if (isMissing(err)) return;
      throw this.named(err, path);
    }
  }

  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      throw new StorageConfigError(`${this.url()}: ${this.why(err)}`);
    }
  }

  /** What a failed request means for a person, without anything secret. */
  private why(err: unknown): string {
    const status = statusOf(err);
    const name = (err as Error)?.name ?? '';
    if (status === 404 || /NoSuchBucket|NotFound/.test(name)) return `the bucket ${this.bucket} does not exist (create it, or fix the URI)`;
    if (status === 403 || status === 401 || /InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|Forbidden|ExpiredToken/.test(name)) {
      return `access denied (${name || status}): check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, and the bucket's permissions`;
    }
    if (/CredentialsProviderError|Could not load credentials/i.test(`${name} ${(err as Error)?.message}`)) return 'no AWS credentials found: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE';
    if (isTransientStoreError(err)) return `the store did not answer (${(err as Error)?.message || name}); check AWS_ENDPOINT_URL_S3/AWS_ENDPOINT_URL and that the store is up`;
    return `${name}${status ? ` (HTTP ${status})` : ''}: ${(err as Error)?.message ?? err}`;
  }

  private named(err: unknown, path: string): Error {
    if (err instanceof S3ServiceException || err instanceof Error) {
      const e = err as Error;
      const out = new Error(`${this.url(path)}: ${this.why(err)}`, { cause: err });
      out.name = e.name;
      Object.assign(out, { $metadata: (err as { $metadata?: unknown }).$metadata, code: (err as { code?: string }).code, transient: isTransientStoreError(err) });
      return out;
    }
    return new Error(`${this.url(path)}: ${String(err)}`);
  }
}
