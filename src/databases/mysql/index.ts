import { registerDialect } from '../registry';
import { mysqlDialect } from './dialect';

registerDialect(['mysql', 'mariadb'], mysqlDialect);
