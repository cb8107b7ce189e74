import BatonPropertiesProvider from './baton-properties-provider.ts';

export default {
  __init__: ['batonPropertiesProvider'],
  batonPropertiesProvider: ['type', BatonPropertiesProvider],
};
