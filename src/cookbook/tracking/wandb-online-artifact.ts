// Logging a "model" artifact as an online run's output, in the order of wandb's own ArtifactSaver
// (wandb 0.22 sdk/artifacts/artifact_saver.py, mutations from sdk/internal/internal_api.py):
// createArtifact (digest, type, collection, aliases, the run as its creator) → if the server
// already holds a COMMITTED artifact with that digest, nothing else → createArtifactManifest
// (placeholder) → createArtifactFiles for each file entry and a PUT of its bytes to the upload URL
// the server hands out (none: it already has them) → createArtifactManifest with the manifest's
// digest and a PUT of wandb_manifest.json → commitArtifact. Reference entries (tinker:// paths)
// are in the manifest only. Every call is safe to repeat after a crash: createArtifact of the same
// digest answers the same artifact (PENDING, or COMMITTED once committed), uploads overwrite.
import { b64md5, manifestJson, type ModelArtifact } from './wandb-artifact.js';

const CREATE_ARTIFACT = `mutation CreateArtifact($artifactTypeName: String!, $artifactCollectionNames: [String!], $entityName: String!, $projectName: String!, $runName: String, $description: String, $digest: String!, $aliases: [ArtifactAliasInput!], $metadata: JSONString) {
  createArtifact(input: {artifactTypeName: $artifactTypeName, artifactCollectionNames: $artifactCollectionNames, entityName: $entityName, projectName: $projectName, runName: $runName, description: $description, digest: $digest, digestAlgorithm: MANIFEST_MD5, aliases: $aliases, metadata: $metadata}) {
    artifact { id state artifactSequence { id latestArtifact { id versionIndex } } }
  }
}`;

const CREATE_MANIFEST = `mutation CreateArtifactManifest($name: String!, $digest: String!, $artifactID: ID!, $baseArtifactID: ID, $entityName: String!, $projectName: String!, $runName: String!, $includeUpload: Boolean!) {
  createArtifactManifest(input: {name: $name, digest: $digest, artifactID: $artifactID, baseArtifactID: $baseArtifactID, entityName: $entityName, projectName: $projectName, runName: $runName}) {
    artifactManifest { id file { id name displayName uploadUrl @include(if: $includeUpload) uploadHeaders @include(if: $includeUpload) } }
  }
}`;

const CREATE_FILES = `mutation CreateArtifactFiles($storageLayout: ArtifactStorageLayout!, $artifactFiles: [CreateArtifactFileSpecInput!]!) {
  createArtifactFiles(input: {artifactFiles: $artifactFiles, storageLayout: $storageLayout}) {
    files { edges { node { id name displayName uploadUrl uploadHeaders artifact { id } } } }
  }
}`;

const COMMIT_ARTIFACT = `mutation CommitArtifact($artifactID: ID!) {
  commitArtifact(input: {artifactID: $artifactID}) { artifact { id digest } }
}`;

export const MANIFEST_FILENAME = 'wandb_manifest.json';

export interface ArtifactTarget {
  entity: string;
  project: string;
  runName: string;
}

export interface WandbApi {
  graphql<T>(query: string, variables: Record<string, unknown>, what: string): Promise<T>;
  /** PUT to an upload URL the server handed out, with its `Name:value` headers. */
  upload(url: string, headers: string[], body: string, what: string): Promise<void>;
}

interface UploadFile {
  uploadUrl?: string | null;
  uploadHeaders?: string[] | null;
}

/** Logs `artifact` as the output of the run; returns the server's artifact id. */
export async function logArtifactOnline(api: WandbApi, target: ArtifactTarget, artifact: ModelArtifact): Promise<string> {
  const { createArtifact } = await api.graphql<{ createArtifact: { artifact: { id: string; state: string; artifactSequence?: { latestArtifact?: { id: string } | null } } } }>(
    CREATE_ARTIFACT,
    {
      artifactTypeName: artifact.type,
      artifactCollectionNames: [artifact.name],
      entityName: target.entity,
      projectName: target.project,
      runName: target.runName,
      description: artifact.description,
      digest: artifact.digest,
      aliases: artifact.aliases.map((alias) => ({ artifactCollectionName: artifact.name, alias })),
      metadata: JSON.stringify(artifact.metadata),
    },
    'createArtifact',
  );
  const { id, state } = createArtifact.artifact;
  if (state === 'COMMITTED') return id; // this digest was logged before (by an attempt that crashed after committing)
  if (state !== 'PENDING' && state !== 'DELETED') throw new Error(`W&B createArtifact: unknown artifact state "${state}"`);
  const latest = createArtifact.artifact.artifactSequence?.latestArtifact?.id;
  const baseArtifactID = latest && latest !== id ? latest : null;
  const manifestVars = { name: MANIFEST_FILENAME, artifactID: id, baseArtifactID, entityName: target.entity, projectName: target.project, runName: target.runName };

  const placeholder = await api.graphql<{ createArtifactManifest: { artifactManifest: { id: string } } }>(CREATE_MANIFEST, { ...manifestVars, digest: '', includeUpload: false }, 'createArtifactManifest');
  const manifestId = placeholder.createArtifactManifest.artifactManifest.id;

  const files = artifact.entries.filter((e) => !e.ref);
  if (files.length) {
    const r = await api.graphql<{ createArtifactFiles: { files: { edges: Array<{ node: UploadFile & { displayName: string } }> } } }>(
      CREATE_FILES,
      { storageLayout: 'V2', artifactFiles: files.map((e) => ({ artifactID: id, artifactManifestID: manifestId, name: e.path, md5: e.digest })) },
      'createArtifactFiles',
    );
    const byName = new Map(r.createArtifactFiles.files.edges.map(({ node }) => [node.displayName, node]));
    for (const e of files) {
      const node = byName.get(e.path);
      if (!node) throw new Error(`W&B createArtifactFiles answered no upload for ${e.path}`);
      // No URL: the server already stores a file with this md5.
      if (node.uploadUrl) await api.upload(node.uploadUrl, node.uploadHeaders ?? [], contentOf(artifact, e.path), `upload ${e.path}`);
    }
  }

  const manifest = manifestJson(artifact.entries);
  const final = await api.graphql<{ createArtifactManifest: { artifactManifest: { file: UploadFile } } }>(CREATE_MANIFEST, { ...manifestVars, digest: b64md5(manifest), includeUpload: true }, 'createArtifactManifest');
  const manifestFile = final.createArtifactManifest.artifactManifest.file;
  if (!manifestFile.uploadUrl) throw new Error('W&B createArtifactManifest answered no upload URL for the manifest');
  await api.upload(manifestFile.uploadUrl, manifestFile.uploadHeaders ?? [], manifest, `upload ${MANIFEST_FILENAME}`);

  await api.graphql(COMMIT_ARTIFACT, { artifactID: id }, 'commitArtifact');
  return id;
}

function contentOf(artifact: ModelArtifact, path: string): string {
  if (path === 'checkpoints.jsonl') return artifact.checkpointsJsonl;
  throw new Error(`no content for artifact file ${path}`);
}
