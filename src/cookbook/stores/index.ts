// The storage a URI names: `s3://bucket/prefix` → S3Storage, anything else → a local folder.
import { S3Storage } from './s3.js';
import { isObjectStoreUri, LocalStorage, type Storage } from './storage.js';

export * from './storage.js';
export { S3Storage, isTransientStoreError } from './s3.js';

export function storageFromUri(uri: string): Storage {
  return isObjectStoreUri(uri) ? new S3Storage(uri) : new LocalStorage(uri);
}
