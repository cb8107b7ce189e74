// multipart/form-data reading for deployment/create (busboy), all in memory with limits.
import busboy from 'busboy';
import type { Request } from 'express';
import { CamundaError, invalidRequest } from './errors.ts';

export interface FormPart {
  /** form field name */
  field: string;
  /** the file name of a file part, else the field name */
  name: string;
  content: Buffer;
  isFile: boolean;
}

export const MULTIPART_LIMITS = { fileSize: 5 * 1024 * 1024, files: 50, fields: 50, parts: 100 } as const;

export function readMultipart(req: Request): Promise<FormPart[]> {
  if (!req.is('multipart/form-data'))
    return Promise.reject(new CamundaError(415, 'InvalidRequestException', 'Send the deployment as multipart/form-data'));
  return new Promise((resolve, reject) => {
    const parts: FormPart[] = [];
    let failed: Error | undefined;
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: MULTIPART_LIMITS });
    } catch (err) {
      reject(invalidRequest(`Unreadable multipart body: ${(err as Error).message}`));
      return;
    }
    bb.on('file', (field, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => {
        failed = new CamundaError(
          413,
          'InvalidRequestException',
          `Resource ${info.filename ?? field} is larger than ${MULTIPART_LIMITS.fileSize} bytes`,
        );
      });
      stream.on('close', () => parts.push({ field, name: info.filename || field, content: Buffer.concat(chunks), isFile: true }));
    });
    bb.on('field', (field, value) => parts.push({ field, name: field, content: Buffer.from(value), isFile: false }));
    const tooMany = () => {
      failed = new CamundaError(413, 'InvalidRequestException', 'Too many parts in the deployment');
    };
    bb.on('partsLimit', tooMany);
    bb.on('filesLimit', tooMany);
    bb.on('fieldsLimit', tooMany);
    bb.on('error', (err) => reject(invalidRequest(`Unreadable multipart body: ${(err as Error).message}`)));
    bb.on('close', () => (failed ? reject(failed) : resolve(parts)));
    req.pipe(bb);
  });
}
