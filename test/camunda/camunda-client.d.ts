// The official client ships JavaScript only; the tests use it untyped.
declare module 'camunda-external-task-client-js' {
  export const Client: any;
  export const Variables: any;
  export const File: any;
  export const BasicAuthInterceptor: any;
  export const logger: any;
}
