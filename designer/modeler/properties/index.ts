import BatonProperties from './baton-properties.ts';
import EventProperties from './event-properties.ts';

export default {
  batonProperties: ['type', BatonProperties],
  batonEventProperties: ['type', EventProperties],
};
