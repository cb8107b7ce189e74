import BatonProperties from './baton-properties.ts';

export default {
  batonProperties: ['type', BatonProperties],
};
